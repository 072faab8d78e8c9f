"""The one way inferbus makes an alarm, and the metrics every flow is watched by.

An alarm fires at or above its threshold over one period; missing data never breaches (an
idle pipeline is a healthy one). :class:`Thresholds` carries the alarm levels from the settings;
:func:`function_metrics` gives a function's resource use (throttles, concurrency and, with
Lambda Insights, memory and CPU) the same way for consumers, workflow steps and the ingest API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

PERIOD = Duration.minutes(1)
INSIGHTS_NAMESPACE = "LambdaInsights"


@dataclass(frozen=True)
class Thresholds:
    """Alarm levels, from :class:`~inferbus.model.settings.InferbusSettings` (see its attributes)."""

    max_message_age_s: int
    error_rate_percent: float
    event_latency_ms: int
    processing_latency_ms: int
    concurrency_percent: float
    memory_percent: float
    insights: bool

    @classmethod
    def from_settings(cls, settings: object) -> Thresholds:
        return cls(
            max_message_age_s=settings.max_message_age_s,  # type: ignore[attr-defined]
            error_rate_percent=settings.error_rate_alarm_percent,  # type: ignore[attr-defined]
            event_latency_ms=settings.event_latency_alarm_ms,  # type: ignore[attr-defined]
            processing_latency_ms=settings.processing_latency_alarm_ms,  # type: ignore[attr-defined]
            concurrency_percent=settings.concurrency_alarm_percent,  # type: ignore[attr-defined]
            memory_percent=settings.memory_alarm_percent,  # type: ignore[attr-defined]
            insights=settings.insights_enabled,  # type: ignore[attr-defined]
        )


def add_alarm(scope: Construct, name: str, metric: cloudwatch.IMetric, threshold: float, description: str,
              topic: sns.ITopic) -> cloudwatch.Alarm:
    """An alarm on ``metric`` >= ``threshold`` over one period that notifies ``topic``."""
    alarm = metric.create_alarm(
        scope,
        name,
        threshold=threshold,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=description,
    )
    alarm.add_alarm_action(actions.SnsAction(topic))
    return alarm


Level = tuple[str, cloudwatch.IMetric, float, str]  # alarm id, metric, threshold, what it means


def add_alarms(scope: Construct, levels: Sequence[Level], owner: str, topic: sns.ITopic) -> list[cloudwatch.Alarm]:
    """One alarm per ``(id, metric, threshold, what)``, its description ``"<owner>: <what>"``."""
    return [add_alarm(scope, name, metric, threshold, f"{owner}: {what}", topic) for name, metric, threshold, what in levels]


def emf_metric(namespace: str, name: str, dimensions: Mapping[str, str], statistic: str = "Sum",
               label: str | None = None) -> cloudwatch.Metric:
    """A metric the handlers emit as EMF (see ``inferbus_lambda.metric_names``)."""
    return cloudwatch.Metric(namespace=namespace, metric_name=name, dimensions_map=dict(dimensions), statistic=statistic,
                             period=PERIOD, label=label)


def error_rate(errors: Mapping[str, cloudwatch.IMetric], total: cloudwatch.IMetric, label: str) -> cloudwatch.MathExpression:
    """100 × (sum of ``errors``) / ``total`` per period, 0 when nothing happened."""
    using = {**errors, "total": total}
    expression = f"IF(total > 0, 100 * ({' + '.join(errors)}) / total, 0)"
    return cloudwatch.MathExpression(expression=expression, using_metrics=using, period=PERIOD, label=label)


def combined(metrics: Sequence[cloudwatch.IMetric], function: str, label: str) -> cloudwatch.IMetric:
    """``SUM`` or ``MAX`` of several functions' metric (one metric stays itself)."""
    if len(metrics) == 1:
        return metrics[0]
    using = {f"m{index}": metric for index, metric in enumerate(metrics)}
    return cloudwatch.MathExpression(expression=f"{function}([{', '.join(using)}])", using_metrics=using, period=PERIOD,
                                     label=label)


@dataclass(frozen=True)
class FunctionMetrics:
    """A function's resource use: throttles, concurrent executions and, with Lambda Insights, memory and CPU."""

    throttles: cloudwatch.IMetric
    concurrency: cloudwatch.IMetric
    memory_percent: cloudwatch.IMetric | None
    cpu_ms: cloudwatch.IMetric | None


def function_metrics(function: lambda_.IFunction, insights: bool) -> FunctionMetrics:
    def insight(name: str) -> cloudwatch.Metric:
        return cloudwatch.Metric(namespace=INSIGHTS_NAMESPACE, metric_name=name,
                                 dimensions_map={"function_name": function.function_name}, statistic="Maximum",
                                 period=PERIOD)

    return FunctionMetrics(
        throttles=function.metric_throttles(period=PERIOD, statistic="Sum"),
        concurrency=function.metric("ConcurrentExecutions", period=PERIOD, statistic="Maximum"),
        memory_percent=insight("memory_utilization") if insights else None,
        cpu_ms=insight("cpu_total_time") if insights else None,
    )


def resource_widget(title: str, functions: Sequence[FunctionMetrics]) -> cloudwatch.GraphWidget:
    """Throttles and concurrency on the left; memory % and CPU ms (Lambda Insights) on the right."""
    left = [m for f in functions for m in (f.throttles, f.concurrency)]
    right = [m for f in functions for m in (f.memory_percent, f.cpu_ms) if m is not None]
    return cloudwatch.GraphWidget(title=title, left=left, right=right)
