"""A RabbitMQ queue on Amazon MQ -> the Lambda consumer that reads it, and its DLQ.

Secure defaults
---------------
- The broker, when the stack makes it (no ``broker_arn``): Amazon MQ for RabbitMQ, single
  instance, **not publicly accessible**, in an isolated subnet of a VPC of its own (no internet
  route; VPC flow logs on; interface endpoints for Lambda, STS and Secrets Manager, which the
  event source mapping's pollers in the broker's subnet call), encrypted at rest (RabbitMQ on
  Amazon MQ takes AWS-owned keys only) and in transit (AMQPS, 5671, the only listener), general
  logs to CloudWatch, minor versions upgraded by AWS. Its one user's password is generated in
  Secrets Manager and reaches the broker only as a dynamic reference.
- An existing broker (``broker_arn``) is read with the existing ``credentials_secret_arn``.
- The function's role holds only what Lambda's Amazon MQ mapping needs: ``mq:DescribeBroker``
  on that broker, ``secretsmanager:GetSecretValue`` on that secret, and the EC2 network
  interface calls (Describe* take no resource; the interfaces are made in the broker's subnets,
  whose ARNs the role cannot know), besides its logs and X-Ray.
- Bad records: Lambda has no on-failure destination for Amazon MQ, and a failed invocation
  returns the whole batch to the queue. The consumer itself sends a record failing on its last
  attempt (``max_receive_count``, counted by the quorum queue's ``x-delivery-count``) to this
  construct's DLQ (SQS, encrypted, TLS-only) with its reason; records breaking their contract go
  to the stack's invalid-events queue, as on every channel.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_amazonmq as amazonmq
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from inferbus.model.rabbitmq import RabbitMqQueue
from inferbus.model.settings import ConsumerSettings

from ..nag import acknowledge_mq_dead_letter_queue, acknowledge_mq_network_interfaces, acknowledge_mq_secret_rotation
from .function import FunctionSpec, add_function
from .secure_queue import build_queue

ENGINE_VERSION = "3.13"  # Amazon MQ's current RabbitMQ line (needs auto minor version upgrades)
HOST_INSTANCE_TYPE = "mq.m7g.medium"
AMQPS_PORT = 5671
BROKER_USER = "inferbus"
# Amazon MQ refuses these in a broker password (and RabbitMQ's URI syntax would need them escaped).
PASSWORD_EXCLUDES = ",:=%/@\"'\\ "
# What Lambda's Amazon MQ mapping calls to reach a broker's subnets (AWS's execution-role list).
NETWORK_INTERFACE_ACTIONS = ["ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface", "ec2:DescribeNetworkInterfaces",
                             "ec2:DescribeSecurityGroups", "ec2:DescribeSubnets", "ec2:DescribeVpcs"]
# What the mapping's pollers call from the broker's isolated subnet.
ENDPOINT_SERVICES = {"Lambda": ec2.InterfaceVpcEndpointAwsService.LAMBDA_,
                     "Sts": ec2.InterfaceVpcEndpointAwsService.STS,
                     "SecretsManager": ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER}


class RabbitMqConsumer(Construct):
    """One consumer reading one RabbitMQ queue through Lambda's Amazon MQ event source mapping.

    Parameters
    ----------
    queue
        The queue, its virtual host, the broker (the stack's, or an existing one) and the credential.
    settings
        Batch size (1-10,000) and batching window (0-300 s), retries (``max_receive_count``),
        memory, timeout, DLQ retention; ``max_concurrency`` does not apply (an MQ mapping takes none).
    function
        The function (code, environment, logs); memory and timeout come from ``settings``.

    Attributes
    ----------
    function, role, log_group
        The consumer function.
    dead_letter_queue
        Where the consumer sends a record failing on its last attempt, with the reason.
    broker_arn, secret_arn
        The broker and the credential the mapping uses.
    broker
        The stack's broker (``None`` for an existing one).
    mapping
        The event source mapping.
    """

    def __init__(self, scope: Construct, construct_id: str, *, queue: RabbitMqQueue, settings: ConsumerSettings,
                 function: FunctionSpec) -> None:
        super().__init__(scope, construct_id)
        if (function.memory_mb, function.timeout_s) != (settings.memory_mb, settings.timeout_s):
            raise ValueError(f"{construct_id}: memory and timeout come from ConsumerSettings, not the FunctionSpec")
        self.queue = queue
        self.function, self.role, self.log_group = add_function(self, function)
        self.dead_letter_queue = build_queue(self, "DeadLetterQueue",
                                             retention_period=Duration.days(settings.dlq_retention_days))
        acknowledge_mq_dead_letter_queue(self.dead_letter_queue)
        self.dead_letter_queue.grant_send_messages(self.function)
        # The consumer reads where and when to dead-letter from its environment (ConsumerEnvironment).
        self.function.add_environment("DEAD_LETTER_QUEUE_URL", self.dead_letter_queue.queue_url)
        self.function.add_environment("MAX_RECEIVE_COUNT", str(settings.max_receive_count))
        self.broker: amazonmq.CfnBroker | None = None
        if queue.stack_broker:
            self.secret_arn = queue.credentials_secret_arn or self._credential().secret_arn
            self.broker = self._broker(queue.credentials_secret_arn)
            self.broker_arn = self.broker.attr_arn
        else:
            assert queue.broker_arn is not None and queue.credentials_secret_arn is not None  # RabbitMqQueue checks it
            self.broker_arn, self.secret_arn = queue.broker_arn, queue.credentials_secret_arn
        self._grant_mapping()
        self.mapping = lambda_.EventSourceMapping(
            self, "Mapping", target=self.function, event_source_arn=self.broker_arn, batch_size=settings.batch_size,
            max_batching_window=Duration.seconds(settings.max_batching_window_s),
            source_access_configurations=[
                lambda_.SourceAccessConfiguration(type=lambda_.SourceAccessConfigurationType.BASIC_AUTH, uri=self.secret_arn),
                lambda_.SourceAccessConfiguration(type=lambda_.SourceAccessConfigurationType.VIRTUAL_HOST,
                                                  uri=queue.virtual_host)])
        # CDK's EventSourceMapping has no ``queues`` prop: an MQ mapping names its one queue here.
        mapping_resource = self.mapping.node.default_child
        assert isinstance(mapping_resource, lambda_.CfnEventSourceMapping)
        mapping_resource.add_property_override("Queues", [queue.queue])
        self.mapping.node.add_dependency(self.role)  # its grants (the role's policy) exist before the mapping polls

    def _credential(self) -> secretsmanager.Secret:
        self.secret = secretsmanager.Secret(
            self, "BrokerCredential", description=f"{self.node.path}: the RabbitMQ broker's user, read by the mapping",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template=f'{{"username": "{BROKER_USER}"}}', generate_string_key="password",
                exclude_characters=PASSWORD_EXCLUDES, password_length=32))
        acknowledge_mq_secret_rotation(self.secret)
        return self.secret

    def _broker(self, existing_secret_arn: str | None) -> amazonmq.CfnBroker:
        # restrict_default_security_group stays off: it is a custom-resource Lambda, and nothing here uses that group.
        vpc = ec2.Vpc(self, "Vpc", max_azs=1, nat_gateways=0, restrict_default_security_group=False,
                      subnet_configuration=[ec2.SubnetConfiguration(name="Broker", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)])
        vpc.add_flow_log("FlowLog", destination=ec2.FlowLogDestination.to_cloud_watch_logs(
            logs.LogGroup(self, "FlowLogs", retention=logs.RetentionDays.ONE_MONTH)))
        group = ec2.SecurityGroup(self, "BrokerSecurityGroup", vpc=vpc, allow_all_outbound=False,
                                  description="The broker and the pollers of its Lambda mapping: AMQPS and HTTPS among themselves")
        group.add_ingress_rule(group, ec2.Port.tcp(AMQPS_PORT), "AMQPS from the mapping's pollers")
        group.add_ingress_rule(group, ec2.Port.tcp(443), "HTTPS to the endpoints, from the pollers")
        group.add_egress_rule(group, ec2.Port.tcp(AMQPS_PORT), "the pollers to the broker")
        group.add_egress_rule(group, ec2.Port.tcp(443), "the pollers to the endpoints")
        subnets = vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        for name, service in ENDPOINT_SERVICES.items():
            vpc.add_interface_endpoint(f"{name}Endpoint", service=service, security_groups=[group], open=False,
                                       subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED))
        secret = (secretsmanager.Secret.from_secret_complete_arn(self, "BrokerCredential", existing_secret_arn)
                  if existing_secret_arn else self.secret)
        return amazonmq.CfnBroker(
            self, "Broker", broker_name=f"{Stack.of(self).stack_name}-{self.node.id}"[:50],
            engine_type="RABBITMQ", engine_version=ENGINE_VERSION, host_instance_type=HOST_INSTANCE_TYPE,
            deployment_mode="SINGLE_INSTANCE", publicly_accessible=False, auto_minor_version_upgrade=True,
            subnet_ids=[subnets.subnet_ids[0]], security_groups=[group.security_group_id],
            encryption_options=amazonmq.CfnBroker.EncryptionOptionsProperty(use_aws_owned_key=True),
            logs=amazonmq.CfnBroker.LogListProperty(general=True),
            users=[amazonmq.CfnBroker.UserProperty(
                username=secret.secret_value_from_json("username").unsafe_unwrap(),  # a dynamic reference, not the value
                password=secret.secret_value_from_json("password").unsafe_unwrap())])

    def _grant_mapping(self) -> None:
        """What Lambda's Amazon MQ mapping calls as the function's role, and nothing more."""
        self.role.add_to_policy(iam.PolicyStatement(actions=["mq:DescribeBroker"], resources=[self.broker_arn]))
        self.role.add_to_policy(iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[self.secret_arn]))
        self.role.add_to_policy(iam.PolicyStatement(actions=NETWORK_INTERFACE_ACTIONS, resources=["*"]))
        acknowledge_mq_network_interfaces(self.role)
