"""cdk-nag: the AwsSolutions pack, and every finding inferbus accepts, with its reason.

Acknowledgments name the exact finding (``Rule[Finding]``) and sit on the construct that
causes it, so the same rule elsewhere still fails the gate.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, App, Stack, Validations
from aws_cdk import aws_iam as iam
from cdk_nag import AwsSolutionsChecks

XRAY_WILDCARD = "AwsSolutions::AwsSolutions-IAM5[Resource::*]"


def _acknowledge(construct: object, finding: str, reason: str) -> None:
    Validations.of(construct).acknowledge(Acknowledgment(id=finding, reason=reason))  # type: ignore[arg-type]


def add_nag_checks(app: App) -> None:
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))


def acknowledge_tracing_wildcard(role: iam.IRole) -> None:
    """Active tracing grants ``xray:PutTraceSegments``/``PutTelemetryRecords`` on ``*``."""
    _acknowledge(role, XRAY_WILDCARD,
                 "X-Ray PutTraceSegments and PutTelemetryRecords support no resource-level permissions: "
                 "Resource '*' is the only form AWS accepts for them, and the actions are write-only telemetry.")


def acknowledge_target_dead_letter_queue(queue: object) -> None:
    """cdk-nag sees only SQS redrive policies, not an EventBridge target's DeadLetterConfig."""
    _acknowledge(queue, "AwsSolutions::AwsSolutions-SQS3",
                 "This queue IS a dead-letter queue: the DeadLetterConfig of the EventBridge rule target, "
                 "which cdk-nag does not recognise as DLQ use. A DLQ of a DLQ would only move the problem.")


def acknowledge_on_failure_queue(queue: object) -> None:
    """cdk-nag sees only SQS redrive policies, not a Lambda function's on-failure destination."""
    _acknowledge(queue, "AwsSolutions::AwsSolutions-SQS3",
                 "This queue IS a dead-letter queue: the on-failure destination of a function invoked asynchronously "
                 "(a workflow's net, by its execution log's subscription), which cdk-nag does not recognise as DLQ use.")


def acknowledge_kafka_network_interfaces(role: iam.IRole) -> None:
    """Reading an MSK cluster takes network interfaces in its VPC; the EC2 actions for them take no resource."""
    _acknowledge(role, "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                 "Lambda's Kafka poller and EventBridge Pipes reach an MSK cluster through network interfaces in its "
                 "VPC: ec2:CreateNetworkInterface, DescribeNetworkInterfaces, DeleteNetworkInterface, DescribeVpcs, "
                 "DescribeSubnets and DescribeSecurityGroups support no resource-level permissions, so '*' is the only "
                 "form AWS accepts. The Kafka actions themselves are scoped to the cluster, topic and group ARNs.")


def acknowledge_review_queue(queue: object) -> None:
    """The manual-review queue has no redrive policy, on purpose."""
    _acknowledge(queue, "AwsSolutions::AwsSolutions-SQS3",
                 "People read the manual-review queue: every listing is a receive, so a redrive policy would move "
                 "cases still waiting for a decision to a DLQ after a few looks. A case nobody decides is not lost: its "
                 "workflow times out and emits ReviewFailed; the queue keeps messages 14 days, longer than that timeout.")


def acknowledge_invalid_events_queue(queue: object) -> None:
    """The invalid-events queue is a terminal destination, like a DLQ."""
    _acknowledge(queue, "AwsSolutions::AwsSolutions-SQS3",
                 "The invalid-events queue is itself a dead-letter destination: records that break their contract "
                 "wait here with the reason for a person (or inferbus redrive) to look at; nothing consumes it "
                 "automatically, so a DLQ of it would never receive anything.")


def acknowledge_state_machine_role(role: iam.IRole) -> None:
    """Tracing and log delivery: what a state machine needs on ``*`` because nothing narrower exists."""
    _acknowledge(role, XRAY_WILDCARD,
                 "A state machine with tracing and logging needs xray:PutTraceSegments, PutTelemetryRecords, "
                 "GetSamplingRules, GetSamplingTargets and the CloudWatch Logs delivery actions (logs:CreateLogDelivery, "
                 "GetLogDelivery, UpdateLogDelivery, DeleteLogDelivery, ListLogDeliveries, PutResourcePolicy, "
                 "DescribeResourcePolicies, DescribeLogGroups); none of them supports resource-level permissions.")


def acknowledge_fault_configuration_bucket(bucket: object) -> None:
    """The AWS FIS configuration bucket has no server access log, on purpose."""
    _acknowledge(bucket, "AwsSolutions::AwsSolutions-S1",
                 "The bucket only carries the short-lived fault configurations AWS FIS writes and its Lambda "
                 "extension polls (opt-in fault_injection_experiments). Only the FIS experiment role may write and the "
                 "targeted functions' roles read one prefix; CloudTrail records who starts experiments. Access logs would "
                 "need a second bucket, itself unlogged, and would mostly record the extension's polls.")


def acknowledge_fault_configuration_reads(role: iam.IRole, objects: str) -> None:
    """A targeted function reads whatever configuration FIS writes under the prefix."""
    _acknowledge(role, f"AwsSolutions::AwsSolutions-IAM5[Resource::{objects}]",
                 "The AWS FIS Lambda extension reads the fault configurations FIS writes under one prefix of the "
                 "FIS configuration bucket; their keys are chosen by FIS per experiment, so only a prefix wildcard can "
                 "name them. s3:GetObject only, on that prefix only.")


def acknowledge_fault_experiment_role(role: iam.IRole, objects: str) -> None:
    """The FIS experiment role: a prefix of the configuration bucket, and two unscopable action families."""
    for finding, reason in (
        (f"Resource::{objects}", "AWS FIS writes and deletes one fault configuration per experiment under one prefix "
         "of the FIS configuration bucket, with keys it chooses; s3:PutObject and s3:DeleteObject on that prefix "
         "only."),
        ("Resource::*", "tag:GetResources (listed by the FIS actions reference as required for aws:lambda:invocation-* "
         "actions) and the CloudWatch Logs delivery actions for the experiment log (logs:CreateLogDelivery, "
         "PutResourcePolicy, DescribeResourcePolicies, DescribeLogGroups) support no resource-level permissions."),
    ):
        _acknowledge(role, f"AwsSolutions::AwsSolutions-IAM5[{finding}]", reason)


def acknowledge_results_bucket(bucket: object) -> None:
    """The results archive bucket has no server access log, on purpose."""
    _acknowledge(bucket, "AwsSolutions::AwsSolutions-S1",
                 "Only the Firehose delivery stream writes to the results archive (its role may PutObject there and "
                 "nowhere else); people read it through IAM, which CloudTrail records. Server access logs would need "
                 "a second bucket, itself unlogged, and would mostly record Firehose's own deliveries.")


def acknowledge_insights_policy(role: iam.IRole) -> None:
    """Lambda Insights needs its AWS managed policy."""
    _acknowledge(role, "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
                 "CloudWatchLambdaInsightsExecutionRolePolicy]",
                 "Lambda Insights (on in prod) is documented to need this AWS managed policy: it lets the Insights "
                 "extension create and write the /aws/lambda-insights log group and nothing else.")


def acknowledge_results_objects(role: iam.IRole, bucket: object) -> None:
    """Firehose writes objects whose keys it chooses (prefix, date, a random suffix)."""
    _acknowledge(role, f"AwsSolutions::AwsSolutions-IAM5[Resource::<{Stack.of(bucket).get_logical_id(bucket.node.default_child)}.Arn>/*]",
                 "Firehose names each object it delivers (results/YYYY/MM/DD/ plus a name of its own), so only the "
                 "bucket's objects as a whole can be named; the actions are exactly those Firehose's S3 destination "
                 "documents, on this one bucket.")
def acknowledge_rule_listing(role: iam.IRole, bus: object) -> None:
    """The unrouted-events check reads every rule of the bus and whether it has a target."""
    _acknowledge(role, XRAY_WILDCARD,
                 "events:ListRules supports no resource-level permissions (Resource '*' is the only form AWS accepts); "
                 "it lists rule names and patterns, read-only, so the unrouted-events check can tell an event no rule "
                 "takes. The role's other '*' is X-Ray's write-only telemetry.")
    bus_id = Stack.of(bus).get_logical_id(bus.node.default_child)  # type: ignore[attr-defined]
    _acknowledge(role, f"AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:events:<AWS::Region>:"
                       f"<AWS::AccountId>:rule/<{bus_id}>/*]",
                 "events:ListTargetsByRule and events:DescribeRule, read-only, on the rules of this one bus: the "
                 "unrouted-events check counts "
                 "every enabled rule with a target, including rules other stacks and users add to the bus later, whose "
                 "names it cannot know at deploy time; a rule ARN names its bus, so no other bus's rules are readable.")


def acknowledge_vpc_access_policy(role: iam.IRole) -> None:
    """A function in a VPC needs the AWS managed policy for its network interfaces."""
    _acknowledge(role, "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                 "AWSLambdaVPCAccessExecutionRole]",
                 "A function in a VPC (here: to reach the Redis claims cache) needs AWSLambdaVPCAccessExecutionRole, the "
                 "policy AWS documents for it: it lets Lambda create, describe and delete the function's network "
                 "interfaces (ec2:CreateNetworkInterface and friends support no narrower resource) and write its logs.")

def acknowledge_mq_dead_letter_queue(queue: object) -> None:
    """A RabbitMQ consumer's DLQ is filled by the consumer itself: Lambda has no on-failure destination for Amazon MQ."""
    _acknowledge(queue, "AwsSolutions::AwsSolutions-SQS3",
                 "This queue IS a dead-letter queue: a RabbitMQ-fed consumer sends a record failing on its last attempt "
                 "here itself, with the reason (Lambda has no on-failure destination for Amazon MQ), which cdk-nag does "
                 "not recognise as DLQ use.")


def acknowledge_mq_network_interfaces(role: iam.IRole) -> None:
    """Lambda's Amazon MQ mapping makes network interfaces in the broker's subnets, as the function's role."""
    _acknowledge(role, "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                 "Lambda's Amazon MQ event source mapping needs ec2:CreateNetworkInterface, DeleteNetworkInterface and "
                 "Describe{NetworkInterfaces,SecurityGroups,Subnets,Vpcs} in its execution role (AWS's documented list): "
                 "the Describe actions support no resource-level permissions, and the interfaces it creates get ids "
                 "only when it creates them.")


def acknowledge_mq_secret_rotation(secret: object) -> None:
    """The broker user's password is not rotated by Secrets Manager."""
    _acknowledge(secret, "AwsSolutions::AwsSolutions-SMG4",
                 "Amazon MQ for RabbitMQ has no Secrets Manager rotation function: a broker user's password changes "
                 "through the broker (UpdateUser), which a rotation of the secret alone would break. It is generated "
                 "(32 characters), never in the template, and read only by this consumer's mapping.")
