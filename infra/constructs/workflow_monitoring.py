"""Alarms and dashboard widgets for one workflow: failed and timed-out executions, undelivered events.

Secure defaults
---------------
- Alarms notify the (encrypted, TLS-only) alarm topic; missing data never breaches.
"""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sns as sns
from constructs import Construct

from .alarms import PERIOD, add_alarm
from .workflow import Workflow


class WorkflowMonitoring(Construct):
    """Parameters
    ----------
    workflow
        The workflow to watch.
    alarm_topic
        Where alarms notify.
    dashboard
        The dashboard to add this workflow's row of widgets to.
    """

    def __init__(self, scope: Construct, construct_id: str, *, workflow: Workflow, alarm_topic: sns.ITopic,
                 dashboard: cloudwatch.Dashboard) -> None:
        super().__init__(scope, construct_id)
        machine = workflow.state_machine
        started = machine.metric_started(period=PERIOD, statistic="Sum")
        succeeded = machine.metric_succeeded(period=PERIOD, statistic="Sum")
        failed = machine.metric_failed(period=PERIOD, statistic="Sum")
        timed_out = machine.metric_timed_out(period=PERIOD, statistic="Sum")
        undelivered = workflow.target_dead_letter_queue.metric_approximate_number_of_messages_visible(
            period=PERIOD, statistic="Maximum")
        name = workflow.node.id
        self.alarms = [
            add_alarm(self, alarm_name, metric, 1, f"{name}: {what}", alarm_topic)
            for alarm_name, metric, what in (
                ("ExecutionsFailed", failed, "executions that failed (each also emitted its ...Failed event)"),
                ("ExecutionsTimedOut", timed_out, "executions that ran out of time"),
                ("UndeliveredEvents", undelivered, "events EventBridge could not start an execution for"),
            )
        ]
        dashboard.add_widgets(
            cloudwatch.GraphWidget(title=f"{name}: executions (per min)", left=[started, succeeded, failed, timed_out]),
            cloudwatch.GraphWidget(title=f"{name}: latency", left=[machine.metric_time(period=PERIOD, statistic="p95")]),
            cloudwatch.GraphWidget(title=f"{name}: undelivered events (target DLQ depth)", left=[undelivered]),
        )
