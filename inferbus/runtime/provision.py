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
import uuid
import warnings
from typing import Any

from inferbus.model.asl import substitute

from .catalogue import CLOUD_ONLY, PARTLY_LOCAL, PROVISIONED_TYPES
from .local_redis import local_redis_url
from .local_redis import prepare as prepare_local_redis
from .resource_policy import unenforced_statements

from .pipes import check_pipe
from .resources import ACCOUNT, PARTITION, REGION, Resolver, UnsupportedIntrinsicError
from .specs import (
    BridgeSpec,
    Deployment,
    EventSourceSpec,
    KafkaMappingSpec,
    FunctionSpec,
    LogSubscriptionSpec,

    PipeSpec,
    QueueInfo,
    StateMachineInfo,
    UnsupportedTemplateError,
)

FIFO_SUFFIX = ".fifo"
FIFO_ATTRIBUTES = ("FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit")
# The InputPath forms the bridge applies: $ and $.field.field (no filters, wildcards, indexes).
SIMPLE_PATH = re.compile(r"\$(\.[A-Za-z0-9_-]+)*")


def _of_type(resources: dict[str, Any], resource_type: str) -> list[tuple[str, dict[str, Any]]]:
    return [(logical_id, r.get("Properties", {})) for logical_id, r in resources.items() if r["Type"] == resource_type]


def provision(template: dict[str, Any], session: Any, *, stack_name: str) -> Deployment:
    """Provision ``template`` in moto.

    Parameters
    ----------
    template
        A synthesized CloudFormation template (``Resources`` is read).
    session
        A boto3 session created inside ``mock_aws``.
    stack_name
        The stack's name: the prefix of generated physical names, as in CloudFormation.

    Returns
    -------
    Deployment
        Names, ARNs and specs by logical id, the resolved ``Outputs``, and what is cloud-only
        or partly local.

    Raises
    ------
    UnsupportedTemplateError
        A resource the runtime cannot run faithfully (e.g. a function with no handler to import).
    """
    resources = template["Resources"]
    deployment = Deployment(Resolver(stack_name))
    clients = {name: session.client(name, region_name=REGION) for name in ("events", "sqs", "dynamodb", "stepfunctions")}
    notes: dict[str, list[str]] = {}

    _provision_buses(resources, deployment, clients["events"], notes)
    _provision_queues(resources, deployment, clients["sqs"])
    _provision_tables(resources, deployment, clients["dynamodb"])
    _name_roles_and_log_groups(resources, deployment.resolver)
    deployment.role_tags = _role_tags(resources, deployment.resolver)
    _name_functions(resources, deployment.resolver)
    _provision_state_machines(resources, deployment, clients["stepfunctions"])
    _provision_rules(resources, deployment, clients["events"], notes)
    # Queue policies name the rules that may send to them.
    for _, props in _of_type(resources, "AWS::SQS::QueuePolicy"):
        for queue_url in deployment.resolver.resolve(props["Queues"]):
            policy = json.dumps(deployment.resolver.resolve(props["PolicyDocument"]))
            clients["sqs"].set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": policy})
    _provision_caches(resources, deployment)
    # Functions last: their environment refers to everything above.
    _specify_functions(resources, deployment, notes)
    _name_brokers(resources, deployment)
    _specify_event_sources(resources, deployment)
    _specify_log_subscriptions(resources, deployment, notes)

    _specify_pipes(resources, deployment, notes)
    _list_what_is_not_local(resources, deployment, notes)
    _resolve_outputs(template.get("Outputs", {}), deployment)
    return deployment


def register_stack(session: Any, stack_name: str, outputs: dict[str, str]) -> str:
    """Make the provisioned stack a CloudFormation stack in moto, holding ``outputs``; return its StackId.

    So ``aws cloudformation describe-stacks --stack-name <name>`` answers with the outputs, as it does
    in AWS. Locally every output is on this one stack (in AWS a component's are on its nested stack: a
    query over the root and the stacks whose ``RootId`` is it finds them in both). Its one resource is
    a ``WaitConditionHandle``, which creates nothing: the resources themselves were provisioned already.
    """
    template = {"Resources": {"Provisioned": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
                "Outputs": {key: {"Value": value} for key, value in sorted(outputs.items())}}
    with warnings.catch_warnings():  # moto warns that it creates nothing for the handle: that is the point of it
        warnings.filterwarnings("ignore", message=".*WaitConditionHandle.*not supported", category=UserWarning)
        return session.client("cloudformation", region_name=REGION).create_stack(
            StackName=stack_name, TemplateBody=json.dumps(template))["StackId"]


def _resolve_outputs(outputs: dict[str, Any], deployment: Deployment) -> None:
    """Each output's value as CloudFormation would give it; one that names a resource the runtime
    does not provision (an alarm topic) is listed as cloud-only instead."""
    for key, output in outputs.items():
        try:
            deployment.outputs[key] = str(deployment.resolver.resolve(output["Value"]))
        except UnsupportedIntrinsicError as error:
            deployment.cloud_only.append((key, "Output", f"names a resource that is not provisioned locally ({error})"))


def _provision_buses(resources: dict[str, Any], deployment: Deployment, events: Any, notes: dict[str, list[str]]) -> None:
    resolver = deployment.resolver
    for logical_id, props in _of_type(resources, "AWS::Events::EventBus"):
        name = props["Name"]
        arn = events.create_event_bus(Name=name)["EventBusArn"]
        resolver.refs[logical_id] = name
        resolver.attributes[(logical_id, "Arn")] = arn
        resolver.attributes[(logical_id, "Name")] = name
        deployment.bus_names[logical_id] = name
        if props.get("Policy"):  # as CloudFormation sets it; the twin enforces it on PutEvents (moto_patches)
            policy = resolver.resolve(props["Policy"])
            events.put_permission(EventBusName=name, Policy=json.dumps(policy))
            for sid in unenforced_statements(policy):
                notes.setdefault(logical_id, []).append(f"policy statement {sid} is not enforced locally: it uses a "
                                                        "condition operator or key the twin does not evaluate")

    for logical_id, props in _of_type(resources, "AWS::Events::Archive"):
        archive_name = props.get("ArchiveName") or resolver.physical_name(logical_id, 48)
        resolver.refs[logical_id] = archive_name
        events.create_archive(
            ArchiveName=archive_name,
            EventSourceArn=resolver.resolve(props["SourceArn"]),
            EventPattern=json.dumps(resolver.resolve(props.get("EventPattern", {}))),
            RetentionDays=props.get("RetentionDays", 0),
        )


def _provision_queues(resources: dict[str, Any], deployment: Deployment, sqs: Any) -> None:
    resolver = deployment.resolver
    # Dead-letter queues first: a work queue's redrive policy names its DLQ's ARN.
    queues = sorted(_of_type(resources, "AWS::SQS::Queue"), key=lambda item: "RedrivePolicy" in item[1])
    for logical_id, props in queues:
        fifo = bool(props.get("FifoQueue"))
        # CloudFormation names a FIFO queue with the ".fifo" SQS requires
        name = props.get("QueueName") or resolver.physical_name(logical_id, 80 - len(FIFO_SUFFIX) * fifo) + FIFO_SUFFIX * fifo
        attributes = {"VisibilityTimeout": str(props.get("VisibilityTimeout", 30))}
        attributes |= {key: str(props[key]).lower() if isinstance(props[key], bool) else str(props[key])
                       for key in FIFO_ATTRIBUTES if key in props}
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
        # describe-table and describe-continuous-backups then say what the template asked (a KMS key of AWS's unless
        # it names one, point-in-time recovery on), as they do in AWS.
        sse = props.get("SSESpecification") or {}
        encryption = ({"Enabled": True, "SSEType": sse.get("SSEType", "KMS"),
                       **({"KMSMasterKeyId": resolver.resolve(sse["KMSMasterKeyId"])} if "KMSMasterKeyId" in sse else {})}
                      if sse.get("SSEEnabled") else {})
        dynamodb.create_table(
            TableName=name,
            KeySchema=props["KeySchema"],
            AttributeDefinitions=props["AttributeDefinitions"],
            BillingMode=props.get("BillingMode", "PAY_PER_REQUEST"),
            **({"SSESpecification": encryption} if encryption else {}),
        )
        ttl = props.get("TimeToLiveSpecification")
        if ttl:
            dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)
        recovery = props.get("PointInTimeRecoverySpecification") or {}
        if recovery.get("PointInTimeRecoveryEnabled"):
            dynamodb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification={
                "PointInTimeRecoveryEnabled": True})
        resolver.refs[logical_id] = name
        resolver.attributes[(logical_id, "Arn")] = f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
        deployment.tables[logical_id] = name


def _role_tags(resources: dict[str, Any], resolver: Resolver) -> dict[str, dict[str, str]]:
    """Each role's IAM tags by ARN, as the template sets them: what a resource policy reads as ``aws:PrincipalTag``."""
    return {resolver.attributes[(logical_id, "Arn")]: {tag["Key"]: str(resolver.resolve(tag["Value"]))
                                                       for tag in props.get("Tags", [])}
            for logical_id, props in _of_type(resources, "AWS::IAM::Role")}


def _name_roles_and_log_groups(resources: dict[str, Any], resolver: Resolver) -> None:
    """Synthetic names and ARNs only: IAM is not enforced, logs are captured elsewhere, topics are
    not notified and Firehose does not deliver locally, but state machines, functions, rules and
    outputs name them (``RoleArn``, ``LogGroupArn``, a bucket in a function's environment, a
    topic's ARN, a rule's Firehose target)."""
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
    for logical_id, props in _of_type(resources, "AWS::SNS::Topic"):  # Ref is the topic's ARN
        name = props.get("TopicName") or resolver.physical_name(logical_id, 256)
        resolver.refs[logical_id] = f"arn:{PARTITION}:sns:{REGION}:{ACCOUNT}:{name}"
        resolver.attributes[(logical_id, "TopicName")] = name
    for logical_id, props in _of_type(resources, "AWS::KinesisFirehose::DeliveryStream"):  # a rule may target one
        name = props.get("DeliveryStreamName") or resolver.physical_name(logical_id)
        resolver.refs[logical_id] = name
        resolver.attributes[(logical_id, "Arn")] = f"arn:{PARTITION}:firehose:{REGION}:{ACCOUNT}:deliverystream/{name}"
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
        substitutions = {key: str(value) for key, value in resolver.resolve(props.get("DefinitionSubstitutions", {})).items()}
        try:
            definition = substitute(_definition_text(logical_id, props, resolver), substitutions)
        except KeyError as missing:
            raise UnsupportedTemplateError(f"state machine {logical_id}: no DefinitionSubstitutions for {missing.args[0]}") from None
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
        logging = optional.get("loggingConfiguration", {})
        log_group = next((d["cloudWatchLogsLogGroup"]["logGroupArn"] for d in logging.get("destinations", [])), None)
        deployment.state_machines[logical_id] = StateMachineInfo(logical_id, name, arn, machine_type, role_arn, definition,
                                                                 substitutions, log_group, logging.get("level", "OFF"))


def _definition_text(logical_id: str, props: dict[str, Any], resolver: Resolver) -> str:
    if "DefinitionString" in props:
        return str(resolver.resolve(props["DefinitionString"]))
    if "Definition" in props:
        return json.dumps(resolver.resolve(props["Definition"]))
    raise UnsupportedTemplateError(
        f"state machine {logical_id}: only DefinitionString or Definition can run locally "
        "(DefinitionS3Location is an asset the runtime does not read; use DefinitionBody.from_string)"
    )


def _logging_configuration(config: dict[str, Any]) -> dict[str, Any]:
    """CloudFormation's spelling of a logging configuration, in the API's (moto stores it, logs nothing)."""
    destinations = [
        {"cloudWatchLogsLogGroup": {"logGroupArn": destination["CloudWatchLogsLogGroup"]["LogGroupArn"]}}
        for destination in config.get("Destinations", [])
    ]
    return {"level": config.get("Level", "OFF"), "includeExecutionData": bool(config.get("IncludeExecutionData", False)),
            "destinations": destinations}


def _provision_rules(resources: dict[str, Any], deployment: Deployment, events: Any,
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
                bridge = _bridge(logical_id, name, rule_arn, resolved)
                deployment.bridges.append(bridge)
                targets.append({"Id": resolved["Id"], "Arn": bridge.state_machine_arn})
                machine = deployment.state_machine_by_arn(bridge.state_machine_arn)
                notes.setdefault(logical_id, []).append(
                    f"target {resolved['Id']} (state machine {machine.logical_id}) is reached through an in-process "
                    "bridge: moto cannot deliver to state machines, so the runtime starts one execution per event "
                    "(Input/InputPath applied, RetryPolicy not; a failed start goes to the target's DLQ)"
                )
            elif service == "firehose":
                notes.setdefault(logical_id, []).append(
                    f"target {resolved['Id']} (a Firehose stream) is cloud-only: moto cannot deliver to Firehose, so "
                    "locally the rule delivers nothing there"
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
                kept = ("Id", "Arn", "InputTransformer", "SqsParameters")  # SqsParameters: a FIFO queue's message group
                targets.append({key: resolved[key] for key in kept if key in resolved})
        if targets:
            events.put_targets(Rule=name, EventBusName=bus, Targets=targets)
        resolver.refs[logical_id] = name
        deployment.rules[logical_id] = name


def _bridge(rule_logical_id: str, rule_name: str, rule_arn: str, target: dict[str, Any]) -> BridgeSpec:
    """What the runtime's bridge needs to deliver to a state machine target (moto raises on those)."""
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
    return BridgeSpec(
        rule_logical_id,
        rule_name,
        rule_arn,
        target["Id"],
        target["Arn"],
        target.get("Input"),
        target.get("InputPath"),
        target.get("DeadLetterConfig", {}).get("Arn"),
    )


def _provision_caches(resources: dict[str, Any], deployment: Deployment) -> None:
    """An ElastiCache serverless cache (the Redis claims store) is the local Redis (:mod:`.local_redis`): its
    endpoint is what the functions' environment reads; it is checked to take writes and emptied first."""
    from urllib.parse import urlparse

    resolver = deployment.resolver
    url = local_redis_url()
    local = urlparse(url)
    caches = _of_type(resources, "AWS::ElastiCache::ServerlessCache")
    if caches:
        prepare_local_redis(url)
    for logical_id, props in caches:
        name = props["ServerlessCacheName"]
        resolver.refs[logical_id] = name
        resolver.attributes[(logical_id, "Endpoint.Address")] = local.hostname or "127.0.0.1"
        resolver.attributes[(logical_id, "Endpoint.Port")] = str(local.port or 6379)
        resolver.attributes[(logical_id, "ARN")] = f"arn:{PARTITION}:elasticache:{REGION}:{ACCOUNT}:serverlesscache:{name}"


def _specify_functions(resources: dict[str, Any], deployment: Deployment, notes: dict[str, list[str]]) -> None:
    resolver = deployment.resolver
    for logical_id, props in _of_type(resources, "AWS::Lambda::Function"):
        variables = resolver.resolve(props.get("Environment", {}).get("Variables", {}))
        environment = {key: str(value) for key, value in variables.items()}
        package_type = props.get("PackageType", "Zip")
        command = props.get("ImageConfig", {}).get("Command", [])
        handler = props.get("Handler") or (command[0] if command else None)
        if not handler:
            raise UnsupportedTemplateError(
                f"Lambda function {logical_id} names no Python handler: a container-image function must set "
                "ImageConfig.Command to its handler (e.g. ['text_pipeline.embed.lambda_handler'])"
            )
        if package_type == "Image":
            notes.setdefault(logical_id, []).append(
                f"container image not built: its handler {handler} (ImageConfig.Command) runs from the source tree"
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
            props.get("ReservedConcurrentExecutions"),
            str(resolver.resolve(props["Role"])) if "Role" in props else None,
        )


def _specify_event_sources(resources: dict[str, Any], deployment: Deployment) -> None:
    resolver = deployment.resolver
    for logical_id, props in _of_type(resources, "AWS::Lambda::EventSourceMapping"):
        function_name = resolver.resolve(props["FunctionName"])
        function_logical_id = next(
            fid for fid, spec in deployment.functions.items() if function_name in (spec.name, spec.arn)
        )
        kafka = _kafka_mapping(props, resolver) if "Topics" in props else None
        deployment.event_sources.append(
            EventSourceSpec(
                logical_id,
                function_logical_id,
                resolver.resolve(props["EventSourceArn"]) if "EventSourceArn" in props else "",
                int(props.get("BatchSize", 10)),
                int(props.get("MaximumBatchingWindowInSeconds", 0)),
                "ReportBatchItemFailures" in props.get("FunctionResponseTypes", []),
                props.get("ScalingConfig", {}).get("MaximumConcurrency"),
                kafka=kafka,
                queues=tuple(resolver.resolve(props.get("Queues", []))),
                virtual_host=next((str(access["URI"]) for access in props.get("SourceAccessConfigurations", [])
                                   if access.get("Type") == "VIRTUAL_HOST"), "/"),
            )
        )


def _name_brokers(resources: dict[str, Any], deployment: Deployment) -> None:
    """An Amazon MQ broker of the template gets its ARN (the broker itself is the local RabbitMQ, :mod:`.rabbitmq`)."""
    resolver = deployment.resolver
    for logical_id, props in _of_type(resources, "AWS::AmazonMQ::Broker"):
        name = str(resolver.resolve(props.get("BrokerName", resolver.physical_name(logical_id, 50))))
        broker_id = "b-" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"inferbus:{resolver.stack_name}:{logical_id}"))
        resolver.refs[logical_id] = broker_id
        resolver.attributes[(logical_id, "Arn")] = f"arn:{PARTITION}:mq:{REGION}:{ACCOUNT}:broker:{name}:{broker_id}"
        resolver.attributes[(logical_id, "Id")] = broker_id


def _specify_log_subscriptions(resources: dict[str, Any], deployment: Deployment, notes: dict[str, list[str]]) -> None:
    """Subscriptions of a function to a log group: locally only a state machine's execution log has records."""
    resolver = deployment.resolver
    for logical_id, props in _of_type(resources, "AWS::Logs::SubscriptionFilter"):
        destination = str(resolver.resolve(props["DestinationArn"]))
        if ":lambda:" not in destination:
            notes.setdefault(logical_id, []).append("a subscription to a destination other than a Lambda function is "
                                                    "cloud-only: locally nothing is delivered to it")
            continue
        group = f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:{resolver.resolve(props['LogGroupName'])}:*"
        function = deployment.function_by_name(destination)
        deployment.log_subscriptions.append(LogSubscriptionSpec(logical_id, group, function.logical_id))

def _specify_pipes(resources: dict[str, Any], deployment: Deployment, notes: dict[str, list[str]]) -> None:
    """SQS -> SQS pipes run locally (:mod:`.pipes`); any other is the cloud's, with the reason."""
    resolver = deployment.resolver
    queue_arns = {queue.arn for queue in deployment.queues.values()}
    for logical_id, props in _of_type(resources, "AWS::Pipes::Pipe"):
        source, target = resolver.resolve(props["Source"]), resolver.resolve(props["Target"])
        if source not in queue_arns or target not in queue_arns:
            notes.setdefault(logical_id, []).append("only a pipe from an SQS queue to an SQS queue runs locally: "
                                                    "this one does not run")
            continue
        target_parameters = props.get("TargetParameters", {})
        sqs_parameters = target_parameters.get("SqsQueueParameters", {})
        spec = PipeSpec(logical_id, source, target,
                        int(props.get("SourceParameters", {}).get("SqsQueueParameters", {}).get("BatchSize", 10)),
                        sqs_parameters.get("MessageGroupId"), sqs_parameters.get("MessageDeduplicationId"),
                        target_parameters.get("InputTemplate"))
        problem = check_pipe(spec)
        if problem is not None:
            raise UnsupportedTemplateError(f"{logical_id}: {problem}")
        deployment.pipes.append(spec)


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


def _kafka_mapping(props: dict[str, Any], resolver: Any) -> KafkaMappingSpec:
    """A Kafka event source mapping's topic, group, start, retries and on-failure queue."""
    group = props.get("AmazonManagedKafkaEventSourceConfig") or props.get("SelfManagedKafkaEventSourceConfig") or {}
    endpoints = props.get("SelfManagedEventSource", {}).get("Endpoints", {}).get("KafkaBootstrapServers", [])
    failure = props.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
    return KafkaMappingSpec(
        topic=props["Topics"][0], group_id=group.get("ConsumerGroupId") or props["Topics"][0],
        starting_position=props.get("StartingPosition", "TRIM_HORIZON"),
        max_retry_attempts=int(props.get("MaximumRetryAttempts", -1)),
        cluster_arn=resolver.resolve(props["EventSourceArn"]) if "EventSourceArn" in props else None,
        bootstrap_servers=tuple(endpoints), on_failure_arn=resolver.resolve(failure) if failure else None)
