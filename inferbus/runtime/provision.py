"""Create in moto, through boto3, what the template declares; list what only the cloud runs.

moto's own CloudFormation is not used: it cannot ``Ref`` a custom event bus as CDK emits
it, skips queue policies, and puts state machines on its non-executing backend.
Provisioning from the template here keeps names, ARNs, redrive policies, patterns,
definitions and environment exactly as synthesized.

Order matters: each resource may only name what was provisioned before it (queues name
their DLQs, state machines name functions, queues and the bus, rules name state machines,
functions' environment names anything).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .resources import ACCOUNT, PARTITION, REGION, Resolver

# What the runtime does not run, and why (listed in every summary, never silently skipped).
CLOUD_ONLY = {
    "AWS::IAM::Role": "IAM is not enforced locally: handlers and state machines run with the runtime's credentials "
    "(roles get a synthetic ARN only)",
    "AWS::IAM::Policy": "IAM is not enforced locally",
    "AWS::Logs::LogGroup": "not created (synthetic ARN): handler logs are captured from stdout, "
    "state machine execution logs exist only in the cloud",
    "AWS::CloudWatch::Alarm": "alarms need CloudWatch",
    "AWS::CloudWatch::Dashboard": "dashboards need CloudWatch",
    "AWS::KMS::Key": "KMS encryption is not emulated",
    "AWS::SNS::Topic": "the alarm topic is only notified by CloudWatch alarms",
    "AWS::SNS::TopicPolicy": "the alarm topic is only notified by CloudWatch alarms",
    "AWS::FIS::ExperimentTemplate": "fault injection experiments run only in AWS",
    # Only with fault_injection_experiments: the FIS extension's configuration bucket. Locally,
    # faults come from the INFERBUS_FAULTS switch instead.
    "AWS::S3::Bucket": "the AWS FIS configuration bucket serves only the FIS Lambda extension, which runs only in AWS "
    "(locally, INFERBUS_FAULTS injects the same faults)",
    "AWS::S3::BucketPolicy": "the AWS FIS configuration bucket's TLS-only policy: the bucket exists only in AWS",
}
PARTLY_LOCAL = {
    "AWS::Events::EventBus": "the bus is created in moto without its resource policy: moto does not enforce bus "
    "policies, so locally any caller may put any source (account-only PutEvents and each internal source reserved to "
    "its producer's role hold only in AWS)",
    "AWS::SQS::QueuePolicy": "policy stored on the queue, not enforced (TLS-only, SourceArn)",
    "AWS::Events::Rule": "target DeadLetterConfig and RetryPolicy are not applied by moto",
    "AWS::Lambda::Function": "runs in-process from the source tree; memory, architecture and tracing are cloud-only",
    "AWS::Lambda::EventSourceMapping": "local poller: one invocation at a time (MaximumConcurrency is cloud-only)",
    "AWS::DynamoDB::Table": "PITR and SSE are cloud-only",
    "AWS::StepFunctions::StateMachine": "the ASL runs on moto's interpreter, Lambda tasks in-process; logging to "
    "CloudWatch Logs and X-Ray tracing are cloud-only; Retry intervals and Wait states take real time; moto applies "
    "execution-name idempotency to EXPRESS machines too (AWS only to STANDARD); SendTaskFailure drops the cause",
}
PROVISIONED_TYPES = {"AWS::Events::EventBus", "AWS::Events::Archive", "AWS::SQS::Queue"}
# The name of the Python handler of a container-image function, which has no Handler property.
LOCAL_HANDLER_VARIABLE = "INFERBUS_LOCAL_HANDLER"
BRIDGE_PREFIX = "inferbus-local-bridge-"
PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")
# The InputPath forms the bridge applies: $ and $.field.field (no filters, wildcards, indexes).
SIMPLE_PATH = re.compile(r"\$(\.[A-Za-z0-9_-]+)*")


class UnsupportedTemplateError(ValueError):
    """The template asks for something the embedded runtime cannot run faithfully."""


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
    package_type: str = "Zip"


@dataclass(frozen=True)
class EventSourceSpec:
    logical_id: str
    function_logical_id: str
    queue_arn: str
    batch_size: int
    max_batching_window_s: int
    report_batch_item_failures: bool
    max_concurrency: int | None


@dataclass(frozen=True)
class StateMachineInfo:
    """A provisioned state machine: ``definition`` is the ASL with its substitutions applied."""

    logical_id: str
    name: str
    arn: str
    type: str
    role_arn: str
    definition: str


@dataclass(frozen=True)
class BridgeSpec:
    """A rule target that is a state machine, reached locally through a bridge queue.

    ``input``/``input_path`` are the target's ``Input``/``InputPath`` (at most one is set).
    """

    rule_logical_id: str
    rule_name: str
    rule_arn: str
    target_id: str
    state_machine_arn: str
    queue: QueueInfo
    input: str | None
    input_path: str | None
    dead_letter_arn: str | None


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
    state_machines: dict[str, StateMachineInfo] = field(default_factory=dict)
    bridges: list[BridgeSpec] = field(default_factory=list)
    target_dead_letter_arns: set[str] = field(default_factory=set)
    cloud_only: list[tuple[str, str, str]] = field(default_factory=list)
    partly_local: list[tuple[str, str, str]] = field(default_factory=list)

    def queue_by_arn(self, arn: str) -> QueueInfo:
        return next(queue for queue in self.queues.values() if queue.arn == arn)

    def state_machine_by_arn(self, arn: str) -> StateMachineInfo:
        return next(machine for machine in self.state_machines.values() if machine.arn == arn)

    @property
    def dead_letter_queues(self) -> list[QueueInfo]:
        arns = {queue.dead_letter_arn for queue in self.queues.values()} | self.target_dead_letter_arns
        return [queue for queue in self.queues.values() if queue.arn in arns]


def _of_type(resources: dict[str, Any], resource_type: str) -> list[tuple[str, dict[str, Any]]]:
    return [(logical_id, r.get("Properties", {})) for logical_id, r in resources.items() if r["Type"] == resource_type]


def provision(template: dict[str, Any], session: Any, *, stack_name: str = "Inferbus") -> Deployment:
    """Provision ``template`` in moto.

    Parameters
    ----------
    template
        A synthesized CloudFormation template (``Resources`` is read).
    session
        A boto3 session created inside ``mock_aws``.
    stack_name
        Prefix of generated physical names, as CloudFormation's stack name is.

    Returns
    -------
    Deployment
        Names, ARNs and specs by logical id, plus what is cloud-only or partly local.

    Raises
    ------
    UnsupportedTemplateError
        A resource the runtime cannot run faithfully (e.g. a function with no handler to import).
    """
    resources = template["Resources"]
    deployment = Deployment(Resolver(stack_name))
    clients = {name: session.client(name, region_name=REGION) for name in ("events", "sqs", "dynamodb", "stepfunctions")}
    notes: dict[str, list[str]] = {}

    _provision_buses(resources, deployment, clients["events"])
    _provision_queues(resources, deployment, clients["sqs"])
    _provision_tables(resources, deployment, clients["dynamodb"])
    _name_roles_and_log_groups(resources, deployment.resolver)
    _name_functions(resources, deployment.resolver)
    _provision_state_machines(resources, deployment, clients["stepfunctions"])
    _provision_rules(resources, deployment, clients["events"], clients["sqs"], notes)
    # Queue policies name the rules that may send to them.
    for _, props in _of_type(resources, "AWS::SQS::QueuePolicy"):
        for queue_url in deployment.resolver.resolve(props["Queues"]):
            policy = json.dumps(deployment.resolver.resolve(props["PolicyDocument"]))
            clients["sqs"].set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": policy})
    # Functions last: their environment refers to everything above.
    _specify_functions(resources, deployment, notes)
    _specify_event_sources(resources, deployment)
    _list_what_is_not_local(resources, deployment, notes)
    return deployment


def _provision_buses(resources: dict[str, Any], deployment: Deployment, events: Any) -> None:
    resolver = deployment.resolver
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


def _provision_queues(resources: dict[str, Any], deployment: Deployment, sqs: Any) -> None:
    resolver = deployment.resolver
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
        queue = _create_queue(sqs, logical_id, name, attributes, redrive)
        resolver.refs[logical_id] = queue.url
        resolver.attributes[(logical_id, "Arn")] = queue.arn
        resolver.attributes[(logical_id, "QueueName")] = name
        resolver.attributes[(logical_id, "QueueUrl")] = queue.url
        deployment.queues[logical_id] = queue


def _create_queue(
    sqs: Any, logical_id: str, name: str, attributes: dict[str, str], redrive: dict[str, Any] | None
) -> QueueInfo:
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    return QueueInfo(
        logical_id,
        name,
        url,
        f"arn:{PARTITION}:sqs:{REGION}:{ACCOUNT}:{name}",
        int(attributes["VisibilityTimeout"]),
        int(redrive["maxReceiveCount"]) if redrive else None,
        redrive["deadLetterTargetArn"] if redrive else None,
    )


def _provision_tables(resources: dict[str, Any], deployment: Deployment, dynamodb: Any) -> None:
    resolver = deployment.resolver
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
        resolver.attributes[(logical_id, "Arn")] = f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
        deployment.tables[logical_id] = name


def _name_roles_and_log_groups(resources: dict[str, Any], resolver: Resolver) -> None:
    """Synthetic names and ARNs only: IAM is not enforced and logs are captured elsewhere,
    but state machines and functions name them (``RoleArn``, ``LogGroupArn``, and the FIS
    configuration bucket in the environment of functions an experiment targets)."""
    for logical_id, props in _of_type(resources, "AWS::IAM::Role"):
        name = props.get("RoleName") or resolver.physical_name(logical_id)
        resolver.refs[logical_id] = name
        resolver.attributes[(logical_id, "Arn")] = f"arn:{PARTITION}:iam::{ACCOUNT}:role{props.get('Path', '/')}{name}"
        role_id = "AROA" + hashlib.sha1(name.encode()).hexdigest()[:17].upper()  # noqa: S324 - an id, not a secret
        resolver.attributes[(logical_id, "RoleId")] = role_id
    for logical_id, props in _of_type(resources, "AWS::Logs::LogGroup"):
        name = props.get("LogGroupName") or resolver.physical_name(logical_id, 512)
        resolver.refs[logical_id] = name
        resolver.attributes[(logical_id, "Arn")] = f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:{name}:*"
    for logical_id, props in _of_type(resources, "AWS::S3::Bucket"):
        name = props.get("BucketName") or resolver.physical_name(logical_id, 63).lower()
        resolver.refs[logical_id] = name
        resolver.attributes[(logical_id, "Arn")] = f"arn:{PARTITION}:s3:::{name}"


def _name_functions(resources: dict[str, Any], resolver: Resolver) -> None:
    for logical_id, props in _of_type(resources, "AWS::Lambda::Function"):
        name = props.get("FunctionName") or resolver.physical_name(logical_id)
        resolver.refs[logical_id] = name
        resolver.attributes[(logical_id, "Arn")] = f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:{name}"


def _provision_state_machines(resources: dict[str, Any], deployment: Deployment, stepfunctions: Any) -> None:
    resolver = deployment.resolver
    machines = _of_type(resources, "AWS::StepFunctions::StateMachine")
    # Names and ARNs first (they are predictable): one machine may start another.
    for logical_id, props in machines:
        name = props.get("StateMachineName") or resolver.physical_name(logical_id, 80)
        arn = f"arn:{PARTITION}:states:{REGION}:{ACCOUNT}:stateMachine:{name}"
        resolver.refs[logical_id] = arn
        resolver.attributes[(logical_id, "Arn")] = arn
        resolver.attributes[(logical_id, "Name")] = name
        resolver.attributes[(logical_id, "StateMachineName")] = name
    for logical_id, props in machines:
        name = resolver.attributes[(logical_id, "Name")]
        machine_type = props.get("StateMachineType", "STANDARD")
        definition = substitute_definition(logical_id, _definition_text(logical_id, props, resolver),
                                           resolver.resolve(props.get("DefinitionSubstitutions", {})))
        role_arn = resolver.resolve(props["RoleArn"])
        optional: dict[str, Any] = {}
        if "LoggingConfiguration" in props:
            optional["loggingConfiguration"] = _logging_configuration(resolver.resolve(props["LoggingConfiguration"]))
        if "TracingConfiguration" in props:
            optional["tracingConfiguration"] = {"enabled": bool(props["TracingConfiguration"].get("Enabled", False))}
        arn = stepfunctions.create_state_machine(
            name=name, definition=definition, roleArn=role_arn, type=machine_type, **optional
        )["stateMachineArn"]
        if arn != resolver.refs[logical_id]:
            raise UnsupportedTemplateError(
                f"state machine {logical_id}: moto named it {arn}, not {resolver.refs[logical_id]}"
            )
        deployment.state_machines[logical_id] = StateMachineInfo(logical_id, name, arn, machine_type, role_arn, definition)


def _definition_text(logical_id: str, props: dict[str, Any], resolver: Resolver) -> str:
    if "DefinitionString" in props:
        return str(resolver.resolve(props["DefinitionString"]))
    if "Definition" in props:
        return json.dumps(resolver.resolve(props["Definition"]))
    raise UnsupportedTemplateError(
        f"state machine {logical_id}: only DefinitionString or Definition can run locally "
        "(DefinitionS3Location is an asset the runtime does not read; use DefinitionBody.from_string)"
    )


def substitute_definition(logical_id: str, definition: str, substitutions: dict[str, Any]) -> str:
    """Replace every ``${Key}`` in an ASL definition with its resolved substitution.

    Parameters
    ----------
    logical_id
        The state machine's logical id (named in errors).
    definition
        The ASL text, intrinsics already resolved.
    substitutions
        ``DefinitionSubstitutions`` with intrinsics resolved.

    Raises
    ------
    UnsupportedTemplateError
        A placeholder has no substitution (CloudFormation would deploy a broken definition).

    Examples
    --------
    >>> substitute_definition("Sm", '{"Resource": "${FnArn}"}', {"FnArn": "arn:x"})
    '{"Resource": "arn:x"}'
    """
    missing = sorted({key for key in PLACEHOLDER.findall(definition) if key not in substitutions})
    if missing:
        raise UnsupportedTemplateError(f"state machine {logical_id}: no DefinitionSubstitutions for {missing}")
    return PLACEHOLDER.sub(lambda match: str(substitutions[match.group(1)]), definition)


def _logging_configuration(config: dict[str, Any]) -> dict[str, Any]:
    """CloudFormation's spelling of a logging configuration, in the API's (moto stores it, logs nothing)."""
    destinations = [
        {"cloudWatchLogsLogGroup": {"logGroupArn": destination["CloudWatchLogsLogGroup"]["LogGroupArn"]}}
        for destination in config.get("Destinations", [])
    ]
    return {"level": config.get("Level", "OFF"), "includeExecutionData": bool(config.get("IncludeExecutionData", False)),
            "destinations": destinations}


def _provision_rules(resources: dict[str, Any], deployment: Deployment, events: Any, sqs: Any,
                     notes: dict[str, list[str]]) -> None:
    resolver = deployment.resolver
    for logical_id, props in _of_type(resources, "AWS::Events::Rule"):
        name = props.get("Name") or resolver.physical_name(logical_id)
        bus = resolver.resolve(props.get("EventBusName", "default"))
        pattern = json.dumps(resolver.resolve(props["EventPattern"]))
        state = props.get("State", "ENABLED")
        rule_arn = events.put_rule(Name=name, EventBusName=bus, EventPattern=pattern, State=state)["RuleArn"]
        resolver.attributes[(logical_id, "Arn")] = rule_arn
        targets = []
        for target in props.get("Targets", []):
            resolved = resolver.resolve(target)
            if "DeadLetterConfig" in resolved:
                deployment.target_dead_letter_arns.add(resolved["DeadLetterConfig"]["Arn"])
            service = resolved["Arn"].split(":")[2]
            if service == "states":
                bridge = _bridge(logical_id, name, rule_arn, resolved, sqs)
                deployment.bridges.append(bridge)
                targets.append({"Id": resolved["Id"], "Arn": bridge.queue.arn})
                machine = deployment.state_machine_by_arn(bridge.state_machine_arn)
                notes.setdefault(logical_id, []).append(
                    f"target {resolved['Id']} (state machine {machine.logical_id}) is reached through the local bridge "
                    f"queue {bridge.queue.name}: moto cannot deliver to state machines, so the runtime starts one "
                    "execution per event (Input/InputPath applied, RetryPolicy not; a failed start goes to the "
                    "target's DLQ)"
                )
            elif service == "lambda":
                raise UnsupportedTemplateError(
                    f"rule {logical_id}: target {resolved['Id']} is a Lambda function, which moto cannot deliver to; "
                    "route through an SQS queue or a state machine"
                )
            else:
                if "Input" in resolved or "InputPath" in resolved:
                    raise UnsupportedTemplateError(
                        f"rule {logical_id}: target {resolved['Id']} has Input or InputPath, which moto ignores for "
                        f"{service} targets; deliver the whole event (or an InputTransformer of quoted strings)"
                    )
                kept = ("Id", "Arn", "InputTransformer")
                targets.append({key: resolved[key] for key in kept if key in resolved})
        events.put_targets(Rule=name, EventBusName=bus, Targets=targets)
        resolver.refs[logical_id] = name
        deployment.rules[logical_id] = name


def _bridge(rule_logical_id: str, rule_name: str, rule_arn: str, target: dict[str, Any], sqs: Any) -> BridgeSpec:
    """A local-only queue that stands in for a state machine target (moto raises on those)."""
    if "InputTransformer" in target:
        raise UnsupportedTemplateError(
            f"rule {rule_logical_id}: target {target['Id']} is a state machine with an InputTransformer, which the "
            "embedded runtime does not apply; use Input, InputPath, or the whole event"
        )
    if "InputPath" in target and not SIMPLE_PATH.fullmatch(target["InputPath"]):
        raise UnsupportedTemplateError(
            f"rule {rule_logical_id}: target {target['Id']} has InputPath {target['InputPath']!r}; "
            "only $ and $.field.field paths are applied locally"
        )
    digest = hashlib.sha1(f"{rule_name}/{target['Id']}".encode()).hexdigest()[:12]  # noqa: S324 - a name, not a secret
    name = BRIDGE_PREFIX + digest
    queue = _create_queue(sqs, f"{rule_logical_id}/{target['Id']}", name, {"VisibilityTimeout": "30"}, None)
    return BridgeSpec(
        rule_logical_id,
        rule_name,
        rule_arn,
        target["Id"],
        target["Arn"],
        queue,
        target.get("Input"),
        target.get("InputPath"),
        target.get("DeadLetterConfig", {}).get("Arn"),
    )


def _specify_functions(resources: dict[str, Any], deployment: Deployment, notes: dict[str, list[str]]) -> None:
    resolver = deployment.resolver
    for logical_id, props in _of_type(resources, "AWS::Lambda::Function"):
        variables = resolver.resolve(props.get("Environment", {}).get("Variables", {}))
        environment = {key: str(value) for key, value in variables.items()}
        package_type = props.get("PackageType", "Zip")
        handler = props.get("Handler") or environment.get(LOCAL_HANDLER_VARIABLE)
        if not handler:
            raise UnsupportedTemplateError(
                f"Lambda function {logical_id} names no Python handler: a container-image function must set "
                f"Environment.Variables.{LOCAL_HANDLER_VARIABLE} (e.g. 'text_pipeline.embed.lambda_handler')"
            )
        if package_type == "Image":
            notes.setdefault(logical_id, []).append(
                f"container image not built: its handler {handler} ({LOCAL_HANDLER_VARIABLE}) runs from the source tree"
            )
        deployment.functions[logical_id] = FunctionSpec(
            logical_id,
            resolver.refs[logical_id],
            resolver.attributes[(logical_id, "Arn")],
            handler,
            environment,
            int(props.get("Timeout", 3)),
            int(props.get("MemorySize", 128)),
            package_type,
        )


def _specify_event_sources(resources: dict[str, Any], deployment: Deployment) -> None:
    resolver = deployment.resolver
    for logical_id, props in _of_type(resources, "AWS::Lambda::EventSourceMapping"):
        function_name = resolver.resolve(props["FunctionName"])
        function_logical_id = next(
            fid for fid, spec in deployment.functions.items() if function_name in (spec.name, spec.arn)
        )
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


def _list_what_is_not_local(resources: dict[str, Any], deployment: Deployment, notes: dict[str, list[str]]) -> None:
    for logical_id, resource in resources.items():
        resource_type = resource["Type"]
        if resource_type in PARTLY_LOCAL:
            deployment.partly_local.append((logical_id, resource_type, PARTLY_LOCAL[resource_type]))
        elif resource_type in CLOUD_ONLY:
            deployment.cloud_only.append((logical_id, resource_type, CLOUD_ONLY[resource_type]))
        elif resource_type not in PROVISIONED_TYPES:
            deployment.cloud_only.append((logical_id, resource_type, "not emulated by the embedded runtime"))
        for note in notes.get(logical_id, []):
            deployment.partly_local.append((logical_id, resource_type, note))
