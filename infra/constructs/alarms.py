"""The one way inferbus makes an alarm: one period, at or above a threshold, missing data is fine.

An idle pipeline is a healthy one, so missing data never breaches.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from constructs import Construct

PERIOD = Duration.minutes(1)


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
