"""Alarms and dashboard widgets for a queue consumer and for a routed queue.

A consumer is watched in the four dimensions: latency (event latency, processing latency, the
oldest queued message), rate (records consumed per minute), errors (error rate in percent, failed
invocations and records, PutEvents failed entries, the DLQs) and resource use (throttles,
concurrency against its ``max_concurrency`` and, with Lambda Insights, memory and CPU).

Secure defaults
---------------
- Alarms notify an SNS topic encrypted with the AWS managed SNS key and closed to non-TLS
  publishers; subscribe to it to be told.
- Every alarm treats missing data as not breaching: an idle pipeline is a healthy one.
"""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sns as sns
from constructs import Construct
from inferbus_lambda.metric_names import (
    BATCH_SIZE,
    EVENT_LATENCY_MS,
    EVENTS_ROUTED,
    EVENTS_UNROUTED,
    INFERENCE_MS,
    PROCESSING_MS,
    PUT_EVENTS_FAILED_ENTRIES,
    RECORDS_DEAD_LETTERED,
    RECORDS_FAILED,
    RECORDS_PUBLISHED,
    RECORDS_REJECTED,
    RESULT_EVENTS,
)

from .alarms import (
    PERIOD,
    Level,
    Thresholds,
    add_alarm,
    add_alarms,
    emf_metric,
    error_rate,
    function_metrics,
    resource_widget,
)
from .dashboard_pages import DashboardPages
from .queue_consumer import QueueConsumer, RoutedQueue

# Every consumer's alarms, by construct id (Memory only with Lambda Insights).
# DeadLetters watches both of a consumer's DLQs (the queue's and its rule target's) with one metric-math
# alarm; PutEvents failures have no alarm of their own: a record whose results were refused fails
# (RecordFailures) or, on its last receive, waits in the DLQ (DeadLetters); the dashboard shows them.
CONSUMER_ALARMS = ("DeadLetters", "Latency", "FunctionErrors", "RecordFailures", "ErrorRate", "EventLatency",
                   "ProcessingLatency", "Throttles", "Concurrency")
INSIGHTS_ALARMS = ("Memory",)
ROUTE_ALARMS = ("DeadLetters",)
# The unrouted-events check's alarms (Memory too with Lambda Insights).
UNROUTED_CHECK_ALARMS = ("DeadLetters", "UndeliveredEvents", "Latency", "FunctionErrors", "RecordFailures", "Throttles",
                         "Unrouted")


def waiting_in_dead_letter_queues(dead_letter_queue: cloudwatch.IMetric, target_dead_letter_queue: cloudwatch.IMetric
                                  ) -> cloudwatch.MathExpression:
    """The deeper of a queue's DLQ and its rule target's DLQ: one alarm for "something of this flow waits
    in a DLQ" (either way the operator looks at both), at the price of the two metrics it reads."""
    return cloudwatch.MathExpression(
        expression="MAX([dlq, undelivered])", using_metrics={"dlq": dead_letter_queue, "undelivered": target_dead_letter_queue},
        period=PERIOD, label="messages in the DLQ or the rule target's DLQ")


class ConsumerMonitoring(Construct):
    """Parameters
    ----------
    consumer
        The consumer to watch.
    alarm_topic
        Where alarms notify.
    metrics_namespace, service
        Where the handler's EMF metrics go (Powertools adds the ``service`` dimension).
    thresholds
        Alarm levels (from the settings).
    max_concurrency
        The consumer's event source cap: the saturation alarm fires at ``concurrency_percent`` of it.
    dashboard
        The dashboard to add this consumer's row of widgets to.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        consumer: QueueConsumer,
        alarm_topic: sns.ITopic,
        metrics_namespace: str,
        service: str,
        thresholds: Thresholds,
        max_concurrency: int,
        dashboard: DashboardPages,
    ) -> None:
        super().__init__(scope, construct_id)
        if thresholds.max_message_age_s < 1:
            raise ValueError(f"max_message_age_s must be 1 or more, got {thresholds.max_message_age_s}")

        def handler_metric(name: str, statistic: str = "Sum", label: str | None = None) -> cloudwatch.Metric:
            return emf_metric(metrics_namespace, name, {"service": service}, statistic, label)

        oldest = consumer.queue.metric_approximate_age_of_oldest_message(period=PERIOD, statistic="Maximum")
        dlq_depth = consumer.dead_letter_queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum")
        target_dlq_depth = consumer.target_dead_letter_queue.metric_approximate_number_of_messages_visible(
            period=PERIOD, statistic="Maximum"
        )
        name = consumer.node.id
        published = handler_metric(RECORDS_PUBLISHED, label="records consumed per minute")
        failed = handler_metric(RECORDS_FAILED, label="records failed per minute")
        rejected = handler_metric(RECORDS_REJECTED, label="records rejected per minute")
        dead_lettered = handler_metric(RECORDS_DEAD_LETTERED, label="records dead-lettered per minute (with the reason)")
        records = handler_metric(BATCH_SIZE, label="records received per minute")
        event_latency = handler_metric(EVENT_LATENCY_MS, "p95", "event latency p95 (ms)")
        processing = handler_metric(PROCESSING_MS, "p95", "batch processing p95 (ms)")
        put_failed = handler_metric(PUT_EVENTS_FAILED_ENTRIES, label="PutEvents failed entries")
        rate = error_rate({"failed": failed}, records, "error rate (% of records)")
        function_errors = consumer.function.metric_errors(period=PERIOD, statistic="Sum")
        resources = function_metrics(consumer.function, thresholds.insights)

        levels: list[Level] = [
            ("DeadLetters", waiting_in_dead_letter_queues(dlq_depth, target_dlq_depth), 1,
             ("messages wait in a DLQ: records that failed max_receive_count times (the queue's DLQ) or events "
              "EventBridge could not deliver to the queue (the rule's target DLQ)")),
            ("Latency", oldest, thresholds.max_message_age_s,
             f"oldest message waited {thresholds.max_message_age_s} s or more"),
            ("FunctionErrors", function_errors, 1, "invocations that failed as a whole"),
            ("RecordFailures", failed, 1, "records reported as batch item failures"),
            ("ErrorRate", rate, thresholds.error_rate_percent,
             f"{thresholds.error_rate_percent:g} % or more of the records of a minute failed"),
            ("EventLatency", event_latency, thresholds.event_latency_ms,
             f"p95 event latency (now minus the event's time) reached {thresholds.event_latency_ms} ms"),
            ("ProcessingLatency", processing, thresholds.processing_latency_ms,
             f"p95 batch processing time reached {thresholds.processing_latency_ms} ms"),
            ("Throttles", resources.throttles, 1, "invocations throttled (account or function concurrency exhausted)"),
            ("Concurrency", resources.concurrency, max(1.0, max_concurrency * thresholds.concurrency_percent / 100),
             f"concurrent executions reached {thresholds.concurrency_percent:g} % of max_concurrency={max_concurrency}: "
             "the backpressure valve is nearly shut, messages will wait"),
        ]
        if resources.memory_percent is not None:
            levels.append(("Memory", resources.memory_percent, thresholds.memory_percent,
                           f"memory use reached {thresholds.memory_percent:g} % (Lambda Insights)"))
        self.alarms = add_alarms(self, levels, construct_id, alarm_topic)

        dashboard.add_widgets(
            cloudwatch.GraphWidget(title=f"{name}: consumption rate (records/min)",
                                   left=[published, failed, rejected, dead_lettered]),
            cloudwatch.GraphWidget(title=f"{name}: latency (ms; oldest message s)", left=[event_latency, processing,
                                   handler_metric(INFERENCE_MS, "p95", "inference p95 (ms)")], right=[oldest]),
            cloudwatch.GraphWidget(title=f"{name}: errors (error rate %)", left=[rate],
                                   right=[function_errors, failed, put_failed]),
            resource_widget(f"{name}: resource use (throttles, concurrency, memory %, CPU ms)", [resources]),
            cloudwatch.GraphWidget(title=f"{name}: DLQ depth", left=[dlq_depth, target_dlq_depth]),
        )


class RouteMonitoring(Construct):
    """Alarms and widgets for a routed queue your own service consumes: its DLQ and its undelivered events.

    Parameters
    ----------
    route
        The routed queue to watch.
    alarm_topic
        Where alarms notify.
    dashboard
        The dashboard to add its widget to.
    """

    def __init__(self, scope: Construct, construct_id: str, *, route: RoutedQueue, alarm_topic: sns.ITopic,
                 dashboard: DashboardPages) -> None:
        super().__init__(scope, construct_id)
        name = route.node.id
        dlq_depth = route.dead_letter_queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum")
        undelivered = route.target_dead_letter_queue.metric_approximate_number_of_messages_visible(
            period=PERIOD, statistic="Maximum")
        self.alarms = [
            add_alarm(self, "DeadLetters", waiting_in_dead_letter_queues(dlq_depth, undelivered), 1,
                      f"{name}: messages wait in a DLQ: your consumer failed them max_receive_count times (the queue's "
                      "DLQ), or EventBridge could not deliver them (the rule's target DLQ)", alarm_topic),
        ]
        dashboard.add_widgets(cloudwatch.GraphWidget(
            title=f"{name}: queue depth and DLQ depth",
            left=[route.queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
                  dlq_depth, undelivered]))


class UnroutedCheckMonitoring(Construct):
    """Alarms and widgets for the unrouted-events check: its queue and function like a consumer's, and
    an alarm when it keeps an event that no rule takes (a producer sends what the pipeline does not handle).

    Parameters
    ----------
    check
        The check's queue, function and DLQs.
    alarm_topic
        Where alarms notify.
    metrics_namespace, service
        Where the check's EMF metrics go.
    thresholds
        Alarm levels (from the settings).
    dashboard
        The dashboard to add its row to.
    """

    def __init__(self, scope: Construct, construct_id: str, *, check: QueueConsumer, alarm_topic: sns.ITopic,
                 metrics_namespace: str, service: str, thresholds: Thresholds, dashboard: DashboardPages) -> None:
        super().__init__(scope, construct_id)

        def handler_metric(name: str, label: str) -> cloudwatch.Metric:
            return emf_metric(metrics_namespace, name, {"service": service}, "Sum", label)

        oldest = check.queue.metric_approximate_age_of_oldest_message(period=PERIOD, statistic="Maximum")
        dlq_depth = check.dead_letter_queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum")
        target_dlq_depth = check.target_dead_letter_queue.metric_approximate_number_of_messages_visible(
            period=PERIOD, statistic="Maximum")
        unrouted = handler_metric(EVENTS_UNROUTED, "events no rule takes, kept with the reason")
        failed = handler_metric(RECORDS_FAILED, "records whose rejection could not be sent")
        function_errors = check.function.metric_errors(period=PERIOD, statistic="Sum")
        resources = function_metrics(check.function, thresholds.insights)
        name = check.node.id
        levels: list[Level] = [
            ("DeadLetters", dlq_depth, 1, "events the check failed max_receive_count times (not checked)"),
            ("UndeliveredEvents", target_dlq_depth, 1, "events EventBridge could not deliver to the check's queue"),
            ("Latency", oldest, thresholds.max_message_age_s,
             f"oldest event waited {thresholds.max_message_age_s} s or more to be checked"),
            ("FunctionErrors", function_errors, 1, "invocations that failed as a whole"),
            ("RecordFailures", failed, 1, "unrouted events whose rejection could not be sent (retried)"),
            ("Throttles", resources.throttles, 1, "invocations throttled"),
            ("Unrouted", unrouted, 1, "events that no rule takes were kept in the invalid-events queue with the reason"),
        ]
        if resources.memory_percent is not None:
            levels.append(("Memory", resources.memory_percent, thresholds.memory_percent,
                           f"memory use reached {thresholds.memory_percent:g} % (Lambda Insights)"))
        self.alarms = add_alarms(self, levels, construct_id, alarm_topic)
        dashboard.add_widgets(
            cloudwatch.GraphWidget(title=f"{name}: every event on the bus, by verdict (per min)", left=[
                handler_metric(RESULT_EVENTS, "results"), handler_metric(EVENTS_ROUTED, "taken by a rule"), unrouted]),
            cloudwatch.GraphWidget(title=f"{name}: latency and errors (oldest message s)", left=[oldest],
                                   right=[function_errors, failed]),
            resource_widget(f"{name}: resource use (throttles, concurrency, memory %, CPU ms)", [resources]),
            cloudwatch.GraphWidget(title=f"{name}: DLQ depth", left=[dlq_depth, target_dlq_depth]),
        )
