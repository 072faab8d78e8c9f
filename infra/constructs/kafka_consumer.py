"""A Kafka topic into a consumer (a Lambda event source mapping), and a Kafka topic onto the bus (a Pipe).

Secure defaults
---------------
- MSK clusters are read with IAM authentication: the role gets ``kafka-cluster:Connect`` and
  ``DescribeCluster`` on the cluster, ``DescribeTopic``/``ReadData`` on the one topic and
  ``DescribeGroup``/``AlterGroup`` on the one consumer group, by ARN: no other topic, group or
  cluster. A self-managed cluster is read with SASL/SCRAM-512, its user in a Secrets Manager secret
  the role may read and nothing else.
- The mapping reports batch item failures (a failure returns its record and its partition's later
  ones, not the batch), retries ``max_receive_count - 1`` times, then sends the batch's description
  (topic, partition, offsets, condition) to an encrypted, TLS-only SQS on-failure queue kept
  ``dlq_retention_days``; records with no CloudEvent or a broken contract are refused by the
  consumer at once, with the reason, to the invalid-events destination its environment names.
- The function is the kit's consumer function (its own role, logs, tracing; see :mod:`function`).

Lambda's poller is the Kafka consumer: ``KafkaTopic.batch_size`` is ``BatchSize`` (the article's
``max.poll.records``), ``max_batching_window_s`` is ``MaximumBatchingWindowInSeconds``; a batch
is also cut at 6 MB (the invocation payload), which stands where ``fetch.max.bytes`` would.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_pipes as pipes
from constructs import Construct

from inferbus.model.kafka import KafkaBridge, KafkaTopic
from inferbus.model.settings import ConsumerSettings

from ..nag import acknowledge_kafka_network_interfaces, acknowledge_on_failure_queue
from .function import FunctionSpec, add_function
from .secure_queue import build_queue

__all__ = ["KafkaConsumer", "KafkaToBus", "kafka_read_statements"]

# What Lambda's poller (or a pipe) does on an MSK cluster with IAM authentication, per resource.
CLUSTER_ACTIONS = ["kafka-cluster:Connect", "kafka-cluster:DescribeCluster"]
TOPIC_ACTIONS = ["kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"]
GROUP_ACTIONS = ["kafka-cluster:DescribeGroup", "kafka-cluster:AlterGroup"]
# Lambda and Pipes reach an MSK cluster through network interfaces in its VPC; these actions take no resource.
NETWORK_ACTIONS = ["ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DeleteNetworkInterface",
                   "ec2:DescribeVpcs", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups"]


def kafka_read_statements(topic: KafkaTopic) -> list[iam.PolicyStatement]:
    """Least privilege to read ``topic`` as its consumer group: the cluster, the topic and the group by ARN
    (MSK), or the SASL/SCRAM secret (self-managed)."""
    group = topic.consumer_group_id
    assert group is not None, "the consumer (or bridge) sets the group"
    if topic.cluster_arn is None:
        return [iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[str(topic.secret_arn)])]
    return [
        iam.PolicyStatement(actions=[*CLUSTER_ACTIONS, "kafka:DescribeClusterV2", "kafka:GetBootstrapBrokers"],
                            resources=[topic.cluster_arn]),
        iam.PolicyStatement(actions=TOPIC_ACTIONS, resources=[str(topic.topic_arn)]),
        iam.PolicyStatement(actions=GROUP_ACTIONS, resources=[str(topic.group_arn(group))]),
        iam.PolicyStatement(actions=NETWORK_ACTIONS, resources=["*"]),
    ]


def _starting_position(topic: KafkaTopic) -> lambda_.StartingPosition:
    return lambda_.StartingPosition.LATEST if topic.starting_position == "LATEST" else lambda_.StartingPosition.TRIM_HORIZON


class KafkaConsumer(Construct):
    """One consumer of a Kafka topic: its function, the event source mapping, the on-failure queue.

    Parameters
    ----------
    topic
        The topic, its cluster, consumer group and batching (``Consumer.broker``, group set).
    settings
        Retries (``max_receive_count``: deliveries of a record before it is given up),
        concurrency, memory, timeout, how long the on-failure queue keeps what it gets.
    function
        The function (code, environment, logs); memory and timeout come from ``settings``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, topic: KafkaTopic, settings: ConsumerSettings,
                 function: FunctionSpec) -> None:
        super().__init__(scope, construct_id)
        if (function.memory_mb, function.timeout_s) != (settings.memory_mb, settings.timeout_s):
            raise ValueError(f"{construct_id}: memory and timeout come from ConsumerSettings, not the FunctionSpec")
        if topic.consumer_group_id is None:
            raise ValueError(f"{construct_id}: the topic needs its consumer group (Consumer sets it to the consumer's name)")
        self.topic = topic
        self.function, self.role, self.log_group = add_function(self, function)
        self.failure_queue = build_queue(self, "FailureQueue", retention_period=Duration.days(settings.dlq_retention_days))
        acknowledge_on_failure_queue(self.failure_queue)
        for statement in kafka_read_statements(topic):
            self.role.add_to_policy(statement)
        if topic.managed:
            acknowledge_kafka_network_interfaces(self.role)
        # A plain mapping, not ManagedKafkaEventSource: that one attaches AWSLambdaMSKExecutionRole (kafka reads on
        # every cluster, '*'); the statements above are the same actions scoped to this cluster, topic and group.
        self.mapping = self.function.add_event_source_mapping(
            "KafkaSource",
            event_source_arn=topic.cluster_arn,
            kafka_bootstrap_servers=list(topic.bootstrap_servers) or None,
            source_access_configurations=None if topic.managed else [lambda_.SourceAccessConfiguration(
                type=lambda_.SourceAccessConfigurationType.SASL_SCRAM_512_AUTH, uri=str(topic.secret_arn))],
            kafka_topic=topic.topic, kafka_consumer_group_id=topic.consumer_group_id,
            starting_position=_starting_position(topic), batch_size=topic.batch_size,
            max_batching_window=Duration.seconds(topic.max_batching_window_s),
            on_failure=event_sources.SqsDlq(self.failure_queue), retry_attempts=settings.max_receive_count - 1,
            report_batch_item_failures=True,
            # error handling controls (retries, partial batch response) are a provisioned-mode feature
            provisioned_poller_config=lambda_.ProvisionedPollerConfig(minimum_pollers=1,
                                                                      maximum_pollers=settings.max_concurrency),
        )


class KafkaToBus(Construct):
    """A Kafka topic's CloudEvents onto the bus through an EventBridge Pipe, so every rule sees them.

    The pipe reads the topic as the bridge's consumer group and puts each record's value (a
    structured CloudEvent) on the bus as ``detail``, its ``type`` the detail-type and its ``source``
    the source, as ingest does. Its role may read that topic as that group and put events on that
    bus, nothing more.
    """

    def __init__(self, scope: Construct, construct_id: str, *, bridge: KafkaBridge, bus: events.IEventBus) -> None:
        super().__init__(scope, construct_id)
        topic = bridge.broker
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"),
                             description=f"{bridge.name}: reads {topic.topic}, puts its events on the bus")
        for statement in kafka_read_statements(topic):
            self.role.add_to_policy(statement)
        if topic.managed:
            acknowledge_kafka_network_interfaces(self.role)
        bus.grant_put_events_to(self.role)
        position = topic.starting_position
        batching = {"batch_size": topic.batch_size, "maximum_batching_window_in_seconds": topic.max_batching_window_s}
        if topic.cluster_arn is not None:
            source = topic.cluster_arn
            source_parameters = pipes.CfnPipe.PipeSourceParametersProperty(
                managed_streaming_kafka_parameters=pipes.CfnPipe.PipeSourceManagedStreamingKafkaParametersProperty(
                    topic_name=topic.topic, consumer_group_id=topic.consumer_group_id, starting_position=position,
                    **batching))
        else:
            first, *more = topic.bootstrap_servers
            source = f"smk://{first}"
            source_parameters = pipes.CfnPipe.PipeSourceParametersProperty(
                self_managed_kafka_parameters=pipes.CfnPipe.PipeSourceSelfManagedKafkaParametersProperty(
                    topic_name=topic.topic, consumer_group_id=topic.consumer_group_id, starting_position=position,
                    additional_bootstrap_servers=more or None,
                    credentials=pipes.CfnPipe.SelfManagedKafkaAccessConfigurationCredentialsProperty(
                        sasl_scram512_auth=topic.secret_arn),
                    **batching))
        self.pipe = pipes.CfnPipe(
            self, "Pipe", role_arn=self.role.role_arn, source=source, target=bus.event_bus_arn,
            description=f"{bridge.name}: Kafka topic {topic.topic} onto the bus",
            source_parameters=source_parameters,
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                input_template="<$.value>",  # the record's value, a CloudEvent, as the event's detail
                event_bridge_event_bus_parameters=pipes.CfnPipe.PipeTargetEventBridgeEventBusParametersProperty(
                    detail_type="$.value.type", source="$.value.source")))
        self.pipe.node.add_dependency(self.role)  # its policy exists before the pipe starts reading
