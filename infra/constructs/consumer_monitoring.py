"""Alarms and dashboard widgets for a queue consumer (latency, consumption rate, errors, DLQ depth) and a routed queue.

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

from .alarms import PERIOD, add_alarm
from .queue_consumer import QueueConsumer, RoutedQueue


class ConsumerMonitoring(Construct):
    """Parameters
    ----------
    consumer
        The consumer to watch.
    alarm_topic
        Where alarms notify.
    metrics_namespace, service
        Where the handler's EMF metrics go (Powertools adds the ``service`` dimension).
    max_message_age_s
        Oldest message age that raises the latency alarm, 1 s or more.
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
        max_message_age_s: int,
        dashboard: cloudwatch.Dashboard,
    ) -> None:
        super().__init__(scope, construct_id)
        if max_message_age_s < 1:
            raise ValueError(f"max_message_age_s must be 1 or more, got {max_message_age_s}")

        def handler_metric(name: str, statistic: str = "Sum") -> cloudwatch.Metric:
            return cloudwatch.Metric(namespace=metrics_namespace, metric_name=name, dimensions_map={"service": service},
                                     statistic=statistic, period=PERIOD)

        oldest = consumer.queue.metric_approximate_age_of_oldest_message(period=PERIOD, statistic="Maximum")
        dlq_depth = consumer.dead_letter_queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum")
        target_dlq_depth = consumer.target_dead_letter_queue.metric_approximate_number_of_messages_visible(
            period=PERIOD, statistic="Maximum"
        )
        published, failed = handler_metric("RecordsPublished"), handler_metric("RecordsFailed")
        function_errors = consumer.function.metric_errors(period=PERIOD, statistic="Sum")

        self.alarms = [
            add_alarm(self, name, metric, threshold, f"{construct_id}: {what}", alarm_topic)
            for name, metric, threshold, what in (
                ("DeadLetters", dlq_depth, 1, "records in the DLQ (they failed max_receive_count times)"),
                ("UndeliveredEvents", target_dlq_depth, 1, "events EventBridge could not deliver to the queue"),
                ("Latency", oldest, max_message_age_s, f"oldest message waited {max_message_age_s} s or more"),
                ("FunctionErrors", function_errors, 1, "invocations that failed as a whole"),
                ("RecordFailures", failed, 1, "records reported as batch item failures"),
            )
        ]

        dashboard.add_widgets(
            cloudwatch.GraphWidget(title=f"{construct_id}: consumption rate (records/min)", left=[published, failed]),
            cloudwatch.GraphWidget(title=f"{construct_id}: latency", left=[oldest],
                                   right=[consumer.function.metric_duration(period=PERIOD, statistic="p95"),
                                          handler_metric("InferenceMs", "p95")]),
            cloudwatch.GraphWidget(title=f"{construct_id}: errors", left=[function_errors, failed]),
            cloudwatch.GraphWidget(title=f"{construct_id}: DLQ depth", left=[dlq_depth, target_dlq_depth]),
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
                 dashboard: cloudwatch.Dashboard) -> None:
        super().__init__(scope, construct_id)
        name = route.node.id
        dlq_depth = route.dead_letter_queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum")
        undelivered = route.target_dead_letter_queue.metric_approximate_number_of_messages_visible(
            period=PERIOD, statistic="Maximum")
        self.alarms = [
            add_alarm(self, "DeadLetters", dlq_depth, 1,
                      f"{name}: messages in the DLQ (your consumer failed them max_receive_count times)", alarm_topic),
            add_alarm(self, "UndeliveredEvents", undelivered, 1, f"{name}: events EventBridge could not deliver", alarm_topic),
        ]
        dashboard.add_widgets(cloudwatch.GraphWidget(
            title=f"{name}: queue depth and DLQ depth",
            left=[route.queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
                  dlq_depth, undelivered]))
