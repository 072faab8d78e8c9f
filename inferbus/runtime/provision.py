"""Create in moto, through boto3, what the template declares; list what only the cloud runs.

moto's own CloudFormation is not used: it cannot ``Ref`` a custom event bus as CDK emits
it, and it skips queue policies. Provisioning from the template here keeps names, ARNs,
redrive policies, patterns and environment exactly as synthesized.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .resources import ACCOUNT, REGION, Resolver

# What the runtime does not run, and why (listed in every summary, never silently skipped).
CLOUD_ONLY = {
    "AWS::IAM::Role": "IAM is not enforced locally: handlers run with the runtime's credentials",
    "AWS::IAM::Policy": "IAM is not enforced locally",
    "AWS::Logs::LogGroup": "logs are captured from the handler's stdout instead",
    "AWS::CloudWatch::Alarm": "alarms need CloudWatch",
    "AWS::CloudWatch::Dashboard": "dashboards need CloudWatch",
    "AWS::KMS::Key": "KMS encryption is not emulated",
    "AWS::SNS::Topic": "the alarm topic is only notified by CloudWatch alarms",
    "AWS::SNS::TopicPolicy": "the alarm topic is only notified by CloudWatch alarms",
    "AWS::FIS::ExperimentTemplate": "fault injection experiments run only in AWS",
}
PARTLY_LOCAL = {
    "AWS::SQS::QueuePolicy": "policy stored on the queue, not enforced (TLS-only, SourceArn)",
    "AWS::Events::Rule": "target DeadLetterConfig and RetryPolicy are not applied by moto",
    "AWS::Lambda::Function": "runs in-process from the source tree; memory, architecture and tracing are cloud-only",
    "AWS::Lambda::EventSourceMapping": "local poller: one invocation at a time (MaximumConcurrency is cloud-only)",
    "AWS::DynamoDB::Table": "PITR and SSE are cloud-only",
}


@dataclass(frozen=True)
class QueueInfo:
    logical_id: str
    name: str
    url: str
    arn: str
    visibility_timeout_s: int
    max_receive_count: int | None
    dead_letter_arn: str | None


@dataclass(frozen=True)
class FunctionSpec:
    logical_id: str
    name: str
    arn: str
    handler: str
    environment: dict[str, str]
    timeout_s: int
    memory_mb: int


@dataclass(frozen=True)
class EventSourceSpec:
    logical_id: str
    function_logical_id: str
    queue_arn: str
    batch_size: int
    max_batching_window_s: int
    report_batch_item_failures: bool
    max_concurrency: int | None


@dataclass
class Deployment:
    """What was provisioned, by logical id."""

    resolver: Resolver
    bus_names: dict[str, str] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)
    functions: dict[str, FunctionSpec] = field(default_factory=dict)
    event_sources: list[EventSourceSpec] = field(default_factory=list)
    target_dead_letter_arns: set[str] = field(default_factory=set)
    cloud_only: list[tuple[str, str, str]] = field(default_factory=list)
    partly_local: list[tuple[str, str, str]] = field(default_factory=list)

    def queue_by_arn(self, arn: str) -> QueueInfo:
        return next(queue for queue in self.queues.values() if queue.arn == arn)

    @property
    def dead_letter_queues(self) -> list[QueueInfo]:
        arns = {queue.dead_letter_arn for queue in self.queues.values()} | self.target_dead_letter_arns
        return [queue for queue in self.queues.values() if queue.arn in arns]


def _of_type(resources: dict[str, Any], resource_type: str) -> list[tuple[str, dict[str, Any]]]:
    return [(logical_id, r.get("Properties", {})) for logical_id, r in resources.items() if r["Type"] == resource_type]


def provision(template: dict[str, Any], session: Any, *, stack_name: str = "Inferbus") -> Deployment:
    """Provision ``template`` with ``session`` (a boto3 session inside ``mock_aws``)."""
    resources = template["Resources"]
    deployment = Deployment(Resolver(stack_name))
    resolver = deployment.resolver
    events = session.client("events", region_name=REGION)
    sqs = session.client("sqs", region_name=REGION)
    dynamodb = session.client("dynamodb", region_name=REGION)

    for logical_id, props in _of_type(resources, "AWS::Events::EventBus"):
        name = props["Name"]
        arn = events.create_event_bus(Name=name)["EventBusArn"]
        resolver.refs[logical_id] = name
        resolver.attributes[(logical_id, "Arn")] = arn
        resolver.attributes[(logical_id, "Name")] = name
        deployment.bus_names[logical_id] = name

    for logical_id, props in _of_type(resources, "AWS::Events::Archive"):
        events.create_archive(
            ArchiveName=resolver.physical_name(logical_id, 48),
            EventSourceArn=resolver.resolve(props["SourceArn"]),
            EventPattern=json.dumps(resolver.resolve(props.get("EventPattern", {}))),
            RetentionDays=props.get("RetentionDays", 0),
        )

    # Dead-letter queues first: a work queue's redrive policy names its DLQ's ARN.
    queues = sorted(_of_type(resources, "AWS::SQS::Queue"), key=lambda item: "RedrivePolicy" in item[1])
    for logical_id, props in queues:
        name = props.get("QueueName") or resolver.physical_name(logical_id, 80)
        attributes = {"VisibilityTimeout": str(props.get("VisibilityTimeout", 30))}
        if "MessageRetentionPeriod" in props:
            attributes["MessageRetentionPeriod"] = str(props["MessageRetentionPeriod"])
        if props.get("SqsManagedSseEnabled"):
            attributes["SqsManagedSseEnabled"] = "true"
        redrive = resolver.resolve(props.get("RedrivePolicy")) if "RedrivePolicy" in props else None
        if redrive:
            attributes["RedrivePolicy"] = json.dumps(redrive)
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
        resolver.refs[logical_id] = url
        resolver.attributes[(logical_id, "Arn")] = arn
        resolver.attributes[(logical_id, "QueueName")] = name
        resolver.attributes[(logical_id, "QueueUrl")] = url
        deployment.queues[logical_id] = QueueInfo(
            logical_id,
            name,
            url,
            arn,
            int(attributes["VisibilityTimeout"]),
            int(redrive["maxReceiveCount"]) if redrive else None,
            redrive["deadLetterTargetArn"] if redrive else None,
        )

    for logical_id, props in _of_type(resources, "AWS::DynamoDB::Table"):
        name = props.get("TableName") or resolver.physical_name(logical_id, 255)
        dynamodb.create_table(
            TableName=name,
            KeySchema=props["KeySchema"],
            AttributeDefinitions=props["AttributeDefinitions"],
            BillingMode=props.get("BillingMode", "PAY_PER_REQUEST"),
        )
        ttl = props.get("TimeToLiveSpecification")
        if ttl:
            dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)
        resolver.refs[logical_id] = name
        resolver.attributes[(logical_id, "Arn")] = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
        deployment.tables[logical_id] = name

    for logical_id, props in _of_type(resources, "AWS::Lambda::Function"):
        name = props.get("FunctionName") or resolver.physical_name(logical_id)
        arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
        resolver.refs[logical_id] = name
        resolver.attributes[(logical_id, "Arn")] = arn

    for logical_id, props in _of_type(resources, "AWS::Events::Rule"):
        name = props.get("Name") or resolver.physical_name(logical_id)
        bus = resolver.resolve(props.get("EventBusName", "default"))
        rule_arn = events.put_rule(Name=name, EventBusName=bus, EventPattern=json.dumps(props["EventPattern"]), State=props.get("State", "ENABLED"))["RuleArn"]
        resolver.attributes[(logical_id, "Arn")] = rule_arn
        targets = []
        for target in props.get("Targets", []):
            resolved = resolver.resolve(target)
            if "DeadLetterConfig" in resolved:
                deployment.target_dead_letter_arns.add(resolved["DeadLetterConfig"]["Arn"])
            targets.append({key: resolved[key] for key in ("Id", "Arn", "InputPath", "InputTransformer") if key in resolved})
        events.put_targets(Rule=name, EventBusName=bus, Targets=targets)
        resolver.refs[logical_id] = name
        deployment.rules[logical_id] = name

    # Queue policies name the rules that may send to them.
    for logical_id, props in _of_type(resources, "AWS::SQS::QueuePolicy"):
        for queue_url in resolver.resolve(props["Queues"]):
            sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": json.dumps(resolver.resolve(props["PolicyDocument"]))})

    # Functions last: their environment refers to everything above.
    for logical_id, props in _of_type(resources, "AWS::Lambda::Function"):
        environment = resolver.resolve(props.get("Environment", {}).get("Variables", {}))
        deployment.functions[logical_id] = FunctionSpec(
            logical_id,
            resolver.refs[logical_id],
            resolver.attributes[(logical_id, "Arn")],
            props["Handler"],
            {key: str(value) for key, value in environment.items()},
            int(props.get("Timeout", 3)),
            int(props.get("MemorySize", 128)),
        )

    for logical_id, props in _of_type(resources, "AWS::Lambda::EventSourceMapping"):
        function_name = resolver.resolve(props["FunctionName"])
        function_logical_id = next(fid for fid, spec in deployment.functions.items() if spec.name == function_name)
        deployment.event_sources.append(
            EventSourceSpec(
                logical_id,
                function_logical_id,
                resolver.resolve(props["EventSourceArn"]),
                int(props.get("BatchSize", 10)),
                int(props.get("MaximumBatchingWindowInSeconds", 0)),
                "ReportBatchItemFailures" in props.get("FunctionResponseTypes", []),
                props.get("ScalingConfig", {}).get("MaximumConcurrency"),
            )
        )

    for logical_id, resource in resources.items():
        resource_type = resource["Type"]
        if resource_type in PARTLY_LOCAL:
            deployment.partly_local.append((logical_id, resource_type, PARTLY_LOCAL[resource_type]))
        elif resource_type in CLOUD_ONLY:
            deployment.cloud_only.append((logical_id, resource_type, CLOUD_ONLY[resource_type]))
        elif resource_type not in {"AWS::Events::EventBus", "AWS::Events::Archive", "AWS::SQS::Queue"}:
            deployment.cloud_only.append((logical_id, resource_type, "not emulated by the embedded runtime"))
    return deployment
