"""Alarms and dashboard widgets for one workflow, in the four dimensions.

Latency: event latency when it starts (its ``Accept`` step), per stage (each step's event latency
and processing time), and the execution's whole time. Rate: executions started and succeeded per
minute. Errors: the error rate in percent of executions, failed and timed-out executions, events
EventBridge could not start it for. Resource use: its functions' throttles and concurrency and,
with Lambda Insights, their memory and CPU.

Secure defaults
---------------
- Alarms notify the (encrypted, TLS-only) alarm topic; missing data never breaches.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct
from inferbus_lambda.metric_names import EVENT_LATENCY_MS, PROCESSING_MS

from .alarms import (
    PERIOD,
    Level,
    Thresholds,
    add_alarms,
    combined,
    emf_metric,
    error_rate,
    function_metrics,
    resource_widget,
)
from .dashboard_pages import DashboardPages
from .workflow import Workflow

# Every workflow's alarms, by construct id (Memory only with Lambda Insights).
WORKFLOW_ALARMS = ("ExecutionsFailed", "ExecutionsTimedOut", "UndeliveredEvents", "ErrorRate", "EventLatency",
                   "ProcessingLatency", "Throttles")
# Every workflow's failure net's alarms (``<Workflow>ExecutionFailures<alarm>``): what it could not report waits.
FAILURE_NET_ALARMS = ("DeadLetters", "FunctionErrors")


class WorkflowMonitoring(Construct):
    """Parameters
    ----------
    workflow
        The workflow to watch.
    alarm_topic
        Where alarms notify.
    metrics_namespace
        Where the steps' EMF metrics go.
    accept_dimensions
        The dimensions of its ``Accept`` step's metrics (``service`` and ``workflow``).
    stages
        Each step's Powertools service, by step (the dimension of its metrics).
    functions
        The functions it invokes (``Accept`` included), for their resource use.
    thresholds
        Alarm levels (from the settings).
    dashboard
        The dashboard to add this workflow's row of widgets to.
    """

    def __init__(self, scope: Construct, construct_id: str, *, workflow: Workflow, alarm_topic: sns.ITopic,
                 metrics_namespace: str, accept_dimensions: Mapping[str, str], stages: Mapping[str, str],
                 functions: Mapping[str, lambda_.IFunction], thresholds: Thresholds,
                 dashboard: DashboardPages) -> None:
        super().__init__(scope, construct_id)
        machine = workflow.state_machine
        started = machine.metric_started(period=PERIOD, statistic="Sum", label="executions started per minute")
        succeeded = machine.metric_succeeded(period=PERIOD, statistic="Sum", label="succeeded per minute")
        failed = machine.metric_failed(period=PERIOD, statistic="Sum", label="failed")
        timed_out = machine.metric_timed_out(period=PERIOD, statistic="Sum", label="timed out")
        undelivered = workflow.target_dead_letter_queue.metric_approximate_number_of_messages_visible(
            period=PERIOD, statistic="Maximum")
        execution_time = machine.metric_time(period=PERIOD, statistic="p95", label="execution time p95 (ms)")
        entry_latency = emf_metric(metrics_namespace, EVENT_LATENCY_MS, accept_dimensions, "p95",
                                   "event latency at start p95 (ms)")
        rate = error_rate({"failed": failed, "timedout": timed_out}, started, "error rate (% of executions)")
        resources = [function_metrics(function, thresholds.insights) for function in functions.values()]
        throttles = combined([r.throttles for r in resources], "SUM", "throttles (all its functions)")
        name = workflow.node.id
        levels: list[Level] = [
            ("ExecutionsFailed", failed, 1, "executions that failed (each also emitted its ...Failed event)"),
            ("ExecutionsTimedOut", timed_out, 1, "executions that ran out of time"),
            ("UndeliveredEvents", undelivered, 1, "events EventBridge could not start an execution for"),
            ("ErrorRate", rate, thresholds.error_rate_percent,
             f"{thresholds.error_rate_percent:g} % or more of a minute's executions failed or timed out"),
            ("EventLatency", entry_latency, thresholds.event_latency_ms,
             f"p95 event latency when an execution starts reached {thresholds.event_latency_ms} ms"),
            ("ProcessingLatency", execution_time, thresholds.processing_latency_ms,
             f"p95 execution time reached {thresholds.processing_latency_ms} ms"),
            ("Throttles", throttles, 1, "invocations of its functions throttled"),
        ]
        memories = [r.memory_percent for r in resources if r.memory_percent is not None]
        if memories:
            levels.append(("Memory", combined(memories, "MAX", "memory use % (highest of its functions)"),
                           thresholds.memory_percent, f"a function's memory use reached {thresholds.memory_percent:g} %"))
        self.alarms = add_alarms(self, levels, name, alarm_topic)

        stage_metrics = [emf_metric(metrics_namespace, metric, {"service": service}, "p95", f"{stem} {what} p95 (ms)")
                         for stem, service in stages.items()
                         for metric, what in ((EVENT_LATENCY_MS, "event latency"), (PROCESSING_MS, "processing"))]
        dashboard.add_widgets(
            cloudwatch.GraphWidget(title=f"{name}: executions (per min)", left=[started, succeeded, failed, timed_out]),
            cloudwatch.GraphWidget(title=f"{name}: latency per stage (ms)", left=[entry_latency, execution_time],
                                   right=stage_metrics),
            cloudwatch.GraphWidget(title=f"{name}: errors (error rate %)", left=[rate], right=[failed, timed_out]),
            resource_widget(f"{name}: resource use (throttles, concurrency, memory %, CPU ms)", resources),
            cloudwatch.GraphWidget(title=f"{name}: undelivered events (target DLQ depth)", left=[undelivered]),
        )
