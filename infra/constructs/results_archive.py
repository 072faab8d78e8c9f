"""The cold tier: every result event delivered to S3 by Firehose, moved to colder storage as it ages.

The hot tiers are the bus archive (replayable, ``archive_retention_days``) and the idempotency
table (claims live as long as an event can come back: ``InferbusSettings.claim_lifetime_s``); this one keeps results for analytics and audits, cheaply.

Secure defaults
---------------
- The bucket is private (every public access blocked), encrypted (SSE-S3), refuses requests
  without TLS, and is kept when the stack is deleted (it holds the only long-term copy).
- Its lifecycle moves objects to S3 Standard-IA, then Glacier Flexible Retrieval, and deletes
  them after the retention; unfinished multipart uploads are removed after a day.
- The delivery stream is encrypted with an AWS owned key; its role has exactly the S3 actions
  Firehose documents, on this bucket, and may write only its own log stream (delivery errors).
- The rule target retries and keeps what it cannot deliver in a DLQ (encrypted, TLS-only).
- Objects are gzip'd JSON Lines (one event per line) under ``results/YYYY/MM/DD/``; records
  Firehose cannot deliver go under ``errors/``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import jsii
from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesisfirehose as firehose
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ..nag import acknowledge_results_bucket, acknowledge_results_objects
from .secure_queue import add_rule_with_dead_letter_queue

DATA_PREFIX = "results/!{timestamp:yyyy/MM/dd}/"
ERROR_PREFIX = "errors/!{firehose:error-output-type}/!{timestamp:yyyy/MM/dd}/"
# What Firehose's S3 destination needs, as its documentation lists it.
# EventBridge's default limit on one rule's event pattern (adjustable to 4,096).
MAX_EVENT_PATTERN_CHARACTERS = 2048
ARCHIVED_DETAIL = {"specversion": ["1.0"]}
S3_DELIVERY_ACTIONS = ("s3:AbortMultipartUpload", "s3:GetBucketLocation", "s3:GetObject", "s3:ListBucket",
                       "s3:ListBucketMultipartUploads", "s3:PutObject")


@jsii.implements(events.IRuleTarget)
class FirehoseTarget:
    """A Firehose stream as a rule target with a DLQ and a retry policy (CDK's own target takes neither).

    ``role`` is the role EventBridge assumes to put records on the stream.
    """

    def __init__(self, stream_arn: str, role: iam.IRole, *, dead_letter_queue: sqs.IQueue, retry_attempts: int,
                 max_event_age: Duration) -> None:
        self.stream_arn = stream_arn
        self.role = role
        self.dead_letter_queue = dead_letter_queue
        self.retry_attempts = retry_attempts
        self.max_event_age = max_event_age

    def bind(self, rule: events.IRule, id: str | None = None) -> events.RuleTargetConfig:  # noqa: A002 - jsii's name
        # What CDK's own targets add for their DLQ: only this rule may send to it.
        self.dead_letter_queue.add_to_resource_policy(iam.PolicyStatement(
            principals=[iam.ServicePrincipal("events.amazonaws.com")], actions=["sqs:SendMessage"],
            resources=[self.dead_letter_queue.queue_arn], conditions={"ArnEquals": {"aws:SourceArn": rule.rule_arn}}))
        return events.RuleTargetConfig(
            arn=self.stream_arn, role=self.role,
            dead_letter_config=events.CfnRule.DeadLetterConfigProperty(arn=self.dead_letter_queue.queue_arn),
            retry_policy=events.CfnRule.RetryPolicyProperty(maximum_retry_attempts=self.retry_attempts,
                                                            maximum_event_age_in_seconds=self.max_event_age.to_seconds()),
        )


class ResultsArchive(Construct):
    """Parameters
    ----------
    bus
        The bus whose results are archived.
    result_sources
        The ``source`` of every producer: their events (results and failures) are archived.
    infrequent_access_after_days, glacier_after_days, retention_days
        The lifecycle (see :class:`~inferbus.model.settings.InferbusSettings`).
    target_retry_attempts, target_max_event_age_s, dlq_retention_days
        EventBridge's delivery retries to the stream, and its DLQ.
    log_retention
        How long Firehose's delivery errors are kept.
    """

    def __init__(self, scope: Construct, construct_id: str, *, bus: events.IEventBus, result_sources: Sequence[str],
                 infrequent_access_after_days: int, glacier_after_days: int, retention_days: int,
                 target_retry_attempts: int, target_max_event_age_s: int, dlq_retention_days: int,
                 log_retention: logs.RetentionDays) -> None:
        super().__init__(scope, construct_id)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            removal_policy=RemovalPolicy.RETAIN,
            lifecycle_rules=[s3.LifecycleRule(
                id="colder-with-age",
                transitions=[
                    s3.Transition(storage_class=s3.StorageClass.INFREQUENT_ACCESS,
                                  transition_after=Duration.days(infrequent_access_after_days)),
                    s3.Transition(storage_class=s3.StorageClass.GLACIER, transition_after=Duration.days(glacier_after_days)),
                ],
                expiration=Duration.days(retention_days),
                abort_incomplete_multipart_upload_after=Duration.days(1),
            )],
        )
        acknowledge_results_bucket(self.bucket)
        self.log_group = logs.LogGroup(self, "DeliveryLogs", retention=log_retention)
        log_stream = logs.LogStream(self, "DeliveryLogStream", log_group=self.log_group, log_stream_name="S3Delivery")
        # Firehose's role: exactly the actions its S3 destination documents, on this bucket; its own log stream.
        self.delivery_role = iam.Role(self, "DeliveryRole", assumed_by=iam.ServicePrincipal(
            "firehose.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}}))
        self.delivery_role.add_to_policy(iam.PolicyStatement(actions=list(S3_DELIVERY_ACTIONS), resources=[
            self.bucket.bucket_arn, self.bucket.arn_for_objects("*")]))
        self.delivery_role.add_to_policy(iam.PolicyStatement(actions=["logs:PutLogEvents"], resources=[
            Stack.of(self).format_arn(service="logs", resource="log-group", arn_format=ArnFormat.COLON_RESOURCE_NAME,
                                      resource_name=f"{self.log_group.log_group_name}:log-stream:{log_stream.log_stream_name}")]))
        acknowledge_results_objects(self.delivery_role, self.bucket)
        self.stream = firehose.CfnDeliveryStream(
            self,
            "Stream",
            delivery_stream_type="DirectPut",
            delivery_stream_encryption_configuration_input=firehose.CfnDeliveryStream
            .DeliveryStreamEncryptionConfigurationInputProperty(key_type="AWS_OWNED_CMK"),
            extended_s3_destination_configuration=firehose.CfnDeliveryStream.ExtendedS3DestinationConfigurationProperty(
                bucket_arn=self.bucket.bucket_arn,
                role_arn=self.delivery_role.role_arn,
                compression_format="GZIP",
                prefix=DATA_PREFIX,
                error_output_prefix=ERROR_PREFIX,
                buffering_hints=firehose.CfnDeliveryStream.BufferingHintsProperty(interval_in_seconds=300, size_in_m_bs=64),
                cloud_watch_logging_options=firehose.CfnDeliveryStream.CloudWatchLoggingOptionsProperty(
                    enabled=True, log_group_name=self.log_group.log_group_name, log_stream_name=log_stream.log_stream_name),
                processing_configuration=firehose.CfnDeliveryStream.ProcessingConfigurationProperty(
                    enabled=True, processors=[firehose.CfnDeliveryStream.ProcessorProperty(type="AppendDelimiterToRecord")]),
            ),
        )
        self.stream.node.add_dependency(self.delivery_role)
        events_role = iam.Role(self, "EventsRole", assumed_by=iam.ServicePrincipal("events.amazonaws.com"),
                               description="EventBridge puts result events on the results archive's stream")
        events_role.add_to_policy(iam.PolicyStatement(actions=["firehose:PutRecord", "firehose:PutRecordBatch"],
                                                      resources=[self.stream.attr_arn]))
        # An event pattern holds at most 2,048 characters: the sources go in as many rules as they need,
        # each delivering to the stream, all keeping what they cannot deliver in one DLQ.
        groups = source_groups(result_sources)
        self.rule, self.target_dead_letter_queue = add_rule_with_dead_letter_queue(
            self,
            bus=bus,
            event_pattern=events.EventPattern(source=groups[0], detail=ARCHIVED_DETAIL),
            target=lambda **retries: FirehoseTarget(self.stream.attr_arn, events_role, **retries),
            retry_attempts=target_retry_attempts,
            max_event_age_s=target_max_event_age_s,
            dlq_retention_days=dlq_retention_days,
            description="Every result and failure event -> Firehose -> S3 (the cold tier)",
        )
        self.rules = [self.rule]
        for number, sources in enumerate(groups[1:], start=2):
            self.rules.append(events.Rule(
                self, f"Rule{number}", event_bus=bus, event_pattern=events.EventPattern(source=sources, detail=ARCHIVED_DETAIL),
                description=f"Result and failure events (sources, part {number}) -> Firehose -> S3 (the cold tier)",
                targets=[FirehoseTarget(self.stream.attr_arn, events_role, dead_letter_queue=self.target_dead_letter_queue,
                                        retry_attempts=target_retry_attempts,
                                        max_event_age=Duration.seconds(target_max_event_age_s))]))


def source_groups(sources: Sequence[str], max_characters: int = MAX_EVENT_PATTERN_CHARACTERS) -> list[list[str]]:
    """The sources, in order, in as few groups as keep each rule's pattern within ``max_characters``.

    >>> source_groups(["inferbus.a", "inferbus.b"], 100)
    [['inferbus.a', 'inferbus.b']]
    >>> [len(g) for g in source_groups([f"inferbus.component-{n:03d}" for n in range(120)])]
    [80, 40]
    """
    def size(group: list[str]) -> int:
        return len(json.dumps({"source": group, "detail": ARCHIVED_DETAIL}, separators=(",", ":")))

    groups: list[list[str]] = [[]]
    for source in sources:
        if groups[-1] and size([*groups[-1], source]) > max_characters:
            groups.append([])
        groups[-1].append(source)
    return groups
