"""Assertions on the synthesized template (one synth per session, shared).

Every expectation about what exists is derived from the declarations (tests/declared.py):
add a component and these tests check it too, unedited.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from inferbus_lambda.environment import (
    AcceptEnvironment,
    ConsumerEnvironment,
    ExecutionFailuresEnvironment,
    FunctionEnvironment,
    IngestEnvironment,
    StepEnvironment,
    UnroutedEnvironment,
)

from inferbus.model.names import (
    ACCEPT_STEM,
    DEAD_LETTER_QUEUE_URL,
    FUNCTION_NAME,
    IDEMPOTENCY_TABLE_OUTPUT,
    INGEST_FUNCTION_OUTPUT,
    INVALID_EVENTS_OUTPUT,
    QUEUE_URL,
    STATE_MACHINE_ARN,
    UNROUTED_CHECK_ID,
)
from inferbus.channel_feeds import fed_by_broker
from inferbus.model.declarations import Channel, Workflow
from inferbus.model.settings import InferbusSettings
from infra.constructs.consumer_monitoring import CONSUMER_ALARMS, ROUTE_ALARMS, UNROUTED_CHECK_ALARMS
from infra.constructs.ingest_api import INGEST_ALARMS
from infra.constructs.workflow_monitoring import FAILURE_NET_ALARMS, WORKFLOW_ALARMS
from tests.declared import ON_QUEUES, ON_THE_BUS, PIPELINE, RESULT_SOURCES
from tests.unit.test_statemachines import wrapped

SETTINGS = InferbusSettings()
# Actions that support no resource-level permissions: X-Ray, and CloudWatch Logs delivery for state machines.
WILDCARD_RESOURCE_ACTIONS = {
    "xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets",
    "logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
    "events:ListRules",  # the unrouted-events check reads the bus's rules
}
TASKS = [(workflow, stem, task) for workflow in PIPELINE.workflows for stem, task in workflow.tasks.items()]
CORE_FUNCTIONS = 1 + bool(PIPELINE.workflows)  # the unrouted-events check, and the Accept step every workflow shares


def is_catch_all(rule: dict) -> bool:
    """The unrouted-events check's rule: every event on the bus (its account), nothing else."""
    return set(rule["EventPattern"]) == {"account"}


def of_type(template, resource_type):
    return {k: r["Properties"] for k, r in template["Resources"].items() if r["Type"] == resource_type}


def output_id(template, key):
    """The logical id a stack output names (``{"Ref": id}`` or ``{"Fn::GetAtt": [id, ...]}``)."""
    value = template["Outputs"][key]["Value"]
    return value["Ref"] if "Ref" in value else value["Fn::GetAtt"][0]


def function_of(template, workflow, stem):
    """The logical id of the function a workflow's ASL invokes as ${<stem>FunctionArn}."""
    machine = of_type(template, "AWS::StepFunctions::StateMachine")[output_id(template, workflow.output_key(STATE_MACHINE_ARN))]
    return machine["DefinitionSubstitutions"][f"{stem}FunctionArn"]["Fn::GetAtt"][0]


def net(workflow) -> str:
    """The construct id of a workflow's net (infra/stack.py ``_execution_failures``), which prefixes its outputs."""
    return f"{workflow.construct_id}ExecutionFailures"


STANDARD = [w for w in PIPELINE.workflows if not w.express]  # their nets drain a queue of status changes
EXPRESS = [w for w in PIPELINE.workflows if w.express]  # theirs are subscribed to the execution log


def test_event_source_mappings_read_each_consumers_settings(template):
    mappings = {m["FunctionName"]["Ref"]: m for m in of_type(template, "AWS::Lambda::EventSourceMapping").values()}
    assert len(mappings) == len(PIPELINE.consumers) + 1 + len(STANDARD)  # the unrouted-events check's, the nets'
    # Those that read an SQS queue; a fifo consumer's has no batching window (Lambda's rule for FIFO queues).
    consumers = [(c.output_key(FUNCTION_NAME), c.output_key(QUEUE_URL), c.settings, c.ordered) for c in ON_QUEUES]
    consumers.append((f"{UNROUTED_CHECK_ID}{FUNCTION_NAME}", f"{UNROUTED_CHECK_ID}{QUEUE_URL}", SETTINGS.unrouted_check,
                      False))
    consumers += [(f"{net(w)}{FUNCTION_NAME}", f"{net(w)}{QUEUE_URL}", SETTINGS.execution_failures, False)
                  for w in STANDARD]
    for function_output, queue_output, settings, ordered in consumers:
        mapping = mappings[output_id(template, function_output)]
        assert mapping["BatchSize"] == settings.batch_size
        assert mapping.get("MaximumBatchingWindowInSeconds") == (None if ordered else settings.max_batching_window_s)
        assert mapping["ScalingConfig"] == {"MaximumConcurrency": settings.max_concurrency}
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert mapping["EventSourceArn"] == {"Fn::GetAtt": [output_id(template, queue_output), "Arn"]}
    for consumer in PIPELINE.consumers:  # a broker's mapping: the same batch, whatever the channel
        if fed_by_broker(consumer):
            mapping = mappings[output_id(template, consumer.output_key(FUNCTION_NAME))]
            assert mapping["BatchSize"] == consumer.settings.batch_size
            assert mapping["MaximumBatchingWindowInSeconds"] == consumer.settings.max_batching_window_s


def test_every_queue_is_encrypted_and_every_work_queue_redrives_to_its_dlq(template):
    queues = of_type(template, "AWS::SQS::Queue")
    assert all(q.get("SqsManagedSseEnabled") for q in queues.values())
    work = {k: q for k, q in queues.items() if "RedrivePolicy" in q}
    declared = [*ON_QUEUES, *PIPELINE.routes]
    # An ordered consumer's rule feeds its arrivals queue, which a pipe moves into its FIFO queue in order.
    arrivals = {pipe["Source"]["Fn::GetAtt"][0] for pipe in of_type(template, "AWS::Pipes::Pipe").values()}
    assert set(work) == {output_id(template, c.output_key(QUEUE_URL)) for c in declared} | {
        output_id(template, f"{UNROUTED_CHECK_ID}{QUEUE_URL}")} | {output_id(template, f"{net(w)}{QUEUE_URL}") for w in STANDARD} \
        | arrivals
    for component in declared:
        queue = work[output_id(template, component.output_key(QUEUE_URL))]
        dead_letter_queue = output_id(template, component.output_key(DEAD_LETTER_QUEUE_URL))
        assert queue["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": [dead_letter_queue, "Arn"]},
                                          "maxReceiveCount": component.settings.max_receive_count}
        assert queue["VisibilityTimeout"] == component.settings.visibility_timeout_s
    dead_letter_arns = {json.dumps(q["RedrivePolicy"]["deadLetterTargetArn"]) for q in work.values()}
    target_dlqs = {json.dumps(t["DeadLetterConfig"]["Arn"]) for r in of_type(template, "AWS::Events::Rule").values()
                   for t in r["Targets"]}
    # Every other queue is a DLQ of a queue or of a rule target, except the people-read review queues
    # and the invalid-events destination (itself a dead-letter destination, with reasons).
    unredriven = {output_id(template, w.review_queue_output) for w in PIPELINE.workflows if w.review_queue}
    unredriven.add(output_id(template, INVALID_EVENTS_OUTPUT))
    # An Express workflow's net is invoked by its log's subscription: its DLQ is the function's on-failure destination.
    on_failure = {output_id(template, f"{net(w)}{DEAD_LETTER_QUEUE_URL}") for w in EXPRESS}
    invoke_configs = of_type(template, "AWS::Lambda::EventInvokeConfig").values()
    assert on_failure == {c["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0] for c in invoke_configs}
    unredriven |= on_failure
    # A broker's consumer's failure queue: its mapping's on-failure destination (Kafka), or written by the consumer
    # itself with the reason (RabbitMQ): no queue redrives into it.
    unredriven |= {output_id(template, c.output_key(DEAD_LETTER_QUEUE_URL)) for c in PIPELINE.consumers if fed_by_broker(c)}
    for queue in set(queues) - set(work) - unredriven:
        arn = json.dumps({"Fn::GetAtt": [queue, "Arn"]})
        assert arn in dead_letter_arns | target_dlqs, queue


def test_review_queues_keep_cases_longer_than_the_review_timeout(template):
    for workflow in PIPELINE.workflows:
        if workflow.review_queue:
            review = of_type(template, "AWS::SQS::Queue")[output_id(template, workflow.review_queue_output)]
            assert review["MessageRetentionPeriod"] > SETTINGS.review_timeout_s


def test_every_queue_denies_requests_without_tls(template):
    queues, policies = of_type(template, "AWS::SQS::Queue"), of_type(template, "AWS::SQS::QueuePolicy")
    covered = {queue["Ref"] for policy in policies.values() for queue in policy["Queues"]}
    assert covered == set(queues)
    for policy in policies.values():
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in policy["PolicyDocument"]["Statement"]
        )


def test_every_rule_target_has_a_dlq_and_retries(template):
    rules = of_type(template, "AWS::Events::Rule")
    # one per component, the one that brings the workflows' rejections to the invalid-events queue, the results
    # archive's, the unrouted-events check's catch-all, and on the default bus each Standard workflow's net's
    assert len(rules) == len(ON_THE_BUS) + bool(PIPELINE.workflows) + SETTINGS.results_archive + 1 + len(STANDARD)
    assert sum(map(is_catch_all, rules.values())) == 1
    nets = [rule for rule in rules.values() if rule.get("EventBusName") == "default"]
    assert len(nets) == len(STANDARD)
    for rule in rules.values():
        if rule in nets:
            assert rule["EventPattern"]["source"] == ["aws.states"]
            assert rule["EventPattern"]["detail"]["status"] == ["FAILED", "TIMED_OUT", "ABORTED"]
        else:
            assert is_catch_all(rule) or rule["EventPattern"]["detail"]["specversion"] == ["1.0"]
        (target,) = rule["Targets"]
        assert "DeadLetterConfig" in target
        assert target["RetryPolicy"]["MaximumRetryAttempts"] == SETTINGS.target_retry_attempts


def test_rules_on_results_accept_only_internal_producers(template):
    result_types = {t for producer in PIPELINE.producers for t in producer.result_types}
    for rule in of_type(template, "AWS::Events::Rule").values():
        if is_catch_all(rule):
            continue
        if set(rule["EventPattern"].get("detail-type", [])) & result_types or "detail-type" not in rule["EventPattern"]:
            assert set(rule["EventPattern"]["source"]) <= set(RESULT_SOURCES.values())


def test_each_rule_is_its_declarations_pattern(template):
    rules = of_type(template, "AWS::Events::Rule")
    for component, event_filter in PIPELINE.filters():
        if fed_by_broker(component):
            continue  # it reads its broker: no rule of the bus
        (rule,) = [r for k, r in rules.items() if k.startswith(f"{component.construct_id}Rule")]
        assert rule["EventPattern"] == PIPELINE.pattern(event_filter, SETTINGS), component.name
        if isinstance(component, Workflow):
            assert rule["Targets"][0]["Arn"] == {"Ref": output_id(template, component.output_key(STATE_MACHINE_ARN))}
        elif not getattr(component, "ordered", False):  # an ordered consumer's rule feeds its arrivals queue
            assert rule["Targets"][0]["Arn"] == {"Fn::GetAtt": [output_id(template, component.output_key(QUEUE_URL)), "Arn"]}


def test_review_threshold_splits_risk_scores_without_gap_or_overlap(template):
    numeric = sorted(p["detail"]["data"]["risk_score"][0]["numeric"] for r in of_type(template, "AWS::Events::Rule").values()
                     if "risk_score" in json.dumps((p := r["EventPattern"]).get("detail", {})))
    assert numeric == [["<", SETTINGS.review_threshold], [">=", SETTINGS.review_threshold]]


def test_bus_is_archived(template):
    (archive,) = of_type(template, "AWS::Events::Archive").values()
    assert archive["RetentionDays"] == SETTINGS.archive_retention_days


def test_idempotency_table_has_ttl_pitr_and_sse(template):
    table = of_type(template, "AWS::DynamoDB::Table")[output_id(template, IDEMPOTENCY_TABLE_OUTPUT)]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True


def test_functions_runtime_handler_and_sizing_come_from_the_declarations(template):
    functions = of_type(template, "AWS::Lambda::Function")
    # each consumer, each workflow task, the unrouted-events check and the Accept step, the ingest endpoint
    assert len(functions) == len(PIPELINE.consumers) + len(TASKS) + CORE_FUNCTIONS + SETTINGS.ingest_api + len(
        PIPELINE.workflows)  # and each workflow's net
    for function in functions.values():
        assert function["Runtime"] == f"python{SETTINGS.python_version}"
        assert function["Architectures"] == ["arm64"]
        assert function["TracingConfig"] == {"Mode": "Active"}
    declared = [(output_id(template, c.output_key(FUNCTION_NAME)), c.handler, c.settings) for c in PIPELINE.consumers]
    declared += [(function_of(template, workflow, stem), task.handler, task.settings) for workflow, stem, task in TASKS]
    declared += [(output_id(template, f"{net(w)}{FUNCTION_NAME}"), "execution_failures.handler.lambda_handler",
                  SETTINGS.execution_failures) for w in PIPELINE.workflows]
    for logical_id, handler, settings in declared:
        function = functions[logical_id]
        assert function["Handler"] == handler
        assert (function["MemorySize"], function["Timeout"]) == (settings.memory_mb, settings.timeout_s)


def environment_model(template, logical_id) -> type[FunctionEnvironment]:
    """The environment model a function's handler validates at init: a consumer's (it has an event
    source), the Accept step's (every state machine names it), the ingest endpoint's, the unrouted-events
    check's, or a workflow step's."""
    if logical_id == output_id(template, INGEST_FUNCTION_OUTPUT):
        return IngestEnvironment
    if logical_id == output_id(template, f"{UNROUTED_CHECK_ID}{FUNCTION_NAME}"):
        return UnroutedEnvironment
    if logical_id in {output_id(template, f"{net(w)}{FUNCTION_NAME}") for w in PIPELINE.workflows}:
        return ExecutionFailuresEnvironment
    if logical_id in {m["FunctionName"]["Ref"] for m in of_type(template, "AWS::Lambda::EventSourceMapping").values()}:
        return ConsumerEnvironment
    accepts = {m["DefinitionSubstitutions"]["AcceptFunctionArn"]["Fn::GetAtt"][0]
               for m in of_type(template, "AWS::StepFunctions::StateMachine").values()}
    return AcceptEnvironment if logical_id in accepts else StepEnvironment


def test_every_functions_environment_is_exactly_what_its_handler_validates(template):
    for logical_id, function in of_type(template, "AWS::Lambda::Function").items():
        model = environment_model(template, logical_id)
        variables = function["Environment"]["Variables"]
        unknown = set(variables) - model.variable_names() - model.PLATFORM_VARIABLES
        assert not unknown, (logical_id, unknown)  # a variable nobody reads is a typo or a leftover
        # CloudFormation resolves tokens at deploy: stand a name in for each, then validate as the handler will.
        concrete = {name: value if isinstance(value, str | int) else f"deployed-{name.lower()}" for name, value in variables.items()}
        model.from_environ({name: str(value) for name, value in concrete.items()})


def test_each_consumers_environment_names_what_it_consumes_and_produces(template):
    functions = of_type(template, "AWS::Lambda::Function")
    for consumer in PIPELINE.consumers:
        variables = functions[output_id(template, consumer.output_key(FUNCTION_NAME))]["Environment"]["Variables"]
        assert (variables["CONSUMES"], variables["PRODUCES"]) == (consumer.accepts.type, consumer.result_type)
        assert variables["RESULT_SOURCE"] == consumer.result_source
        assert variables["INFERBUS_MODELS"] == ",".join(consumer.models)


def test_state_machines_run_the_declared_asl_files_with_logging_and_tracing(template):
    from inferbus.model.asl import placeholders

    machines = of_type(template, "AWS::StepFunctions::StateMachine")
    assert len(machines) == len(PIPELINE.workflows)
    for workflow in PIPELINE.workflows:
        machine = machines[output_id(template, workflow.output_key(STATE_MACHINE_ARN))]
        # the file wrapped in the kit's protocol at synth: placeholders filled at deploy
        assert json.loads(machine["DefinitionString"]) == wrapped(workflow)
        assert machine["StateMachineType"] == ("EXPRESS" if workflow.express else "STANDARD")
        assert placeholders(machine["DefinitionString"]) == set(machine["DefinitionSubstitutions"]), workflow.name
        substitutions = machine["DefinitionSubstitutions"]
        assert (substitutions["WorkflowName"], substitutions["FailureType"]) == (workflow.name, workflow.failure)
        assert substitutions["ResultSource"] == workflow.result_source
        assert machine["TracingConfiguration"] == {"Enabled": True}
        assert machine["LoggingConfiguration"]["Level"] == SETTINGS.workflow_log_level
        assert machine["LoggingConfiguration"]["IncludeExecutionData"] is SETTINGS.workflow_log_execution_data


def test_state_machine_roles_invoke_only_their_own_functions(template):
    machines = of_type(template, "AWS::StepFunctions::StateMachine")
    policies = of_type(template, "AWS::IAM::Policy")
    for machine in machines.values():
        role = machine["RoleArn"]["Fn::GetAtt"][0]
        statements = [s for p in policies.values() if {"Ref": role} in p["Roles"] for s in p["PolicyDocument"]["Statement"]]
        invoked = {json.dumps(r) for s in statements if s["Action"] == "lambda:InvokeFunction"
                   for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])}
        named = {json.dumps(v) for k, v in machine["DefinitionSubstitutions"].items() if k.endswith("FunctionArn")}
        assert invoked == named


# What a Kafka consumer's mapping needs to reach an MSK cluster in its VPC (its network interfaces), which take no
# resource-level permissions: allowed only when one is declared.
KAFKA_NETWORK_ACTIONS = {"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DeleteNetworkInterface",
                         "ec2:DescribeVpcs", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups"}
UNSCOPABLE = WILDCARD_RESOURCE_ACTIONS | (
    KAFKA_NETWORK_ACTIONS if any(c.channel is Channel.KAFKA for c in PIPELINE.consumers) else set())


def test_no_wildcard_actions_and_only_unscopable_actions_on_any_resource(template):
    for policy in of_type(template, "AWS::IAM::Policy").values():
        for statement in policy["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert not any("*" in action for action in actions), actions
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            assert not any(isinstance(r, str) and r != "*" and "*" in r for r in resources), resources
            if "*" in resources:
                assert set(actions) <= UNSCOPABLE, actions


def test_no_managed_policies_on_roles(template):
    for role in of_type(template, "AWS::IAM::Role").values():
        assert "ManagedPolicyArns" not in role


def test_cdk_nag_fails_synth_on_an_unacknowledged_finding(tmp_path):
    """The nag gate is live: an unencrypted queue added to the stack must fail synthesis."""
    script = f"""
import os
os.environ["JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"] = "20"
from aws_cdk import aws_sqs as sqs
from infra.app import build_app
app, stack = build_app(outdir={str(tmp_path)!r}, context={{"aws:cdk:bundling-stacks": []}},
                       builtin_cloud_formation_validation=False)
sqs.Queue(stack, "Unsafe", encryption=sqs.QueueEncryption.UNENCRYPTED)
app.synth()
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "AwsSolutions-SQS" in result.stdout + result.stderr


@pytest.mark.parametrize("variant", ["template", "image_variant_template", "fis_template", "prod_template"])
def test_cfn_lint_passes(variant, request, tmp_path):
    path = tmp_path / "template.json"
    path.write_text(json.dumps(request.getfixturevalue(variant)))
    result = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), "--ignore-checks", "W3005", "--", str(path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def alarm_metrics(alarm: dict) -> set[str]:
    """The metric names an alarm watches (one, or those of its metric math)."""
    if "MetricName" in alarm:
        return {alarm["MetricName"]}
    return {m["MetricStat"]["Metric"]["MetricName"] for m in alarm["Metrics"] if "MetricStat" in m}


def test_alarms_watch_queues_functions_and_workflows_and_notify_the_encrypted_topic(template):
    alarms = of_type(template, "AWS::CloudWatch::Alarm")
    metrics = set().union(*(alarm_metrics(alarm) for alarm in alarms.values()))
    assert metrics == {"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage", "Errors", "RecordsFailed",
                       "ExecutionsFailed", "ExecutionsTimedOut", "EventLatencyMs", "ProcessingMs", "Throttles",
                       "ConcurrentExecutions", "PutEventsFailedEntries", "ExecutionTime", "BatchSize", "ExecutionsStarted",
                       "EventsUnrouted"}
    # Insights is off outside prod, so no Memory alarms; the results archive watches its target DLQ.
    assert not SETTINGS.insights_enabled
    # A broker-fed consumer's alarms are its channel's (a rabbitmq one's: its DLQ and its errors).
    broker_alarms = [k for k in alarms for c in PIPELINE.consumers if fed_by_broker(c) and k.startswith(c.construct_id)]
    assert all(any(k.startswith(f"{c.construct_id}{alarm}") for k in broker_alarms)
               for c in PIPELINE.consumers if fed_by_broker(c) for alarm in ("DeadLetters", "Errors"))
    assert len(alarms) == (len(CONSUMER_ALARMS) * len(ON_QUEUES) + len(broker_alarms)
                           + (len(WORKFLOW_ALARMS) + len(FAILURE_NET_ALARMS)) * len(PIPELINE.workflows)
                           + len(ROUTE_ALARMS) * len(PIPELINE.routes) + len(INGEST_ALARMS) * SETTINGS.ingest_api
                           + SETTINGS.results_archive + len(UNROUTED_CHECK_ALARMS))
    (topic_id,) = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::SNS::Topic"]
    assert all(alarm["AlarmActions"] == [{"Ref": topic_id}] for alarm in alarms.values())
    assert "alias/aws/sns" in json.dumps(template["Resources"][topic_id]["Properties"]["KmsMasterKeyId"])
    ages = [a for a in alarms.values() if alarm_metrics(a) == {"ApproximateAgeOfOldestMessage"}]
    assert {a["Threshold"] for a in ages} == {SETTINGS.max_message_age_s}


def test_alarm_thresholds_come_from_the_settings(template):
    alarms = of_type(template, "AWS::CloudWatch::Alarm").values()
    by_metric: dict[str, set] = {}
    for alarm in alarms:
        watched = alarm_metrics(alarm)
        if len(watched) == 1:
            by_metric.setdefault(watched.pop(), set()).add(alarm["Threshold"])
    assert by_metric["EventLatencyMs"] == {SETTINGS.event_latency_alarm_ms}
    assert by_metric["ProcessingMs"] | by_metric["ExecutionTime"] == {SETTINGS.processing_latency_alarm_ms}
    assert by_metric["ConcurrentExecutions"] == {max(1, c.settings.max_concurrency * SETTINGS.concurrency_alarm_percent / 100)
                                                 for c in ON_QUEUES}
    rates = [a for a in alarms if "100 *" in json.dumps(a.get("Metrics", []))]
    assert len(rates) == len(ON_QUEUES) + len(PIPELINE.workflows)  # one error-rate alarm per flow on a queue
    assert {a["Threshold"] for a in rates} == {SETTINGS.error_rate_alarm_percent}


def test_dashboard_shows_rate_latency_errors_and_dlq_depth(template):
    (dashboard,) = of_type(template, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["DashboardBody"])
    for title in ("consumption rate", "latency", "errors", "DLQ depth", "executions", "undelivered events", "resource use"):
        assert title in body
    for component in PIPELINE.producers:  # all four dimensions for each flow (a broker's consumer: its channel's)
        if fed_by_broker(component):
            continue
        for dimension in ("latency", "errors", "resource use"):
            assert f"{component.construct_id}: {dimension}" in body, (component.name, dimension)


def test_any_function_can_be_a_container_image(template, image_variant_template):
    from tests.infra.conftest import IMAGE_TASK

    workflow, stem, task = IMAGE_TASK
    zip_function = of_type(template, "AWS::Lambda::Function")[function_of(template, workflow, stem)]
    image_id = function_of(image_variant_template, workflow, stem)
    image_function = of_type(image_variant_template, "AWS::Lambda::Function")[image_id]
    assert "ZipFile" not in json.dumps(zip_function["Code"]) and "S3Key" in zip_function["Code"]
    assert image_function["PackageType"] == "Image" and "ImageUri" in image_function["Code"]
    assert "Handler" not in image_function and "Runtime" not in image_function
    assert image_function["ImageConfig"]["Command"] == [task.handler] == [zip_function["Handler"]]
    assert image_function["Environment"] == zip_function["Environment"]
    dockerfile = (Path(__file__).resolve().parents[2] / "functions" / "Dockerfile").read_text()
    assert "lambda/python:${PYTHON_VERSION}" in dockerfile
    # Only that function changes: the others stay zip functions.
    others = [f for k, f in of_type(image_variant_template, "AWS::Lambda::Function").items() if k != image_id]
    assert len(others) == len(of_type(template, "AWS::Lambda::Function")) - 1 and all("Handler" in f for f in others)


def test_a_stage_names_the_stack_bus_and_every_generated_name(tmp_path):
    from inferbus.local import LocalPipeline
    from inferbus.template import synthesize

    staged = synthesize(context={"stage": "dev"}, outdir=str(tmp_path))
    (bus,) = of_type(staged, "AWS::Events::EventBus").values()
    assert bus["Name"] == f"{SETTINGS.bus_name}-dev"
    dashboard = next(iter(of_type(staged, "AWS::CloudWatch::Dashboard").values()))
    assert dashboard["DashboardName"] == f"{SETTINGS.stack_name}-dev-pipeline"
    with LocalPipeline(staged, settings=InferbusSettings(stage="dev"), tap=False) as pipeline:
        assert pipeline.bus_name == "inferbus-dev"
        names = [q.name for q in pipeline.deployment.queues.values()] + list(pipeline.deployment.tables.values())
        names += [f.name for f in pipeline.deployment.functions.values()]
        assert names and all(name.startswith(f"{SETTINGS.stack_name}-dev-") for name in names)


def test_context_overrides_a_setting_and_a_components_setting_naming_a_bad_one(tmp_path):
    from inferbus.model.settings import SettingsError
    from inferbus.template import synthesize

    consumer = PIPELINE.consumers[0]
    changed = synthesize(context={"review_threshold": "0.7", f"{consumer.name}.batch_size": "50"}, outdir=str(tmp_path / "a"))
    (mapping,) = [m for m in of_type(changed, "AWS::Lambda::EventSourceMapping").values()
                  if m["FunctionName"]["Ref"] == output_id(changed, consumer.output_key(FUNCTION_NAME))]
    assert mapping["BatchSize"] == 50
    assert "0.7" in json.dumps([r["EventPattern"] for r in of_type(changed, "AWS::Events::Rule").values()])
    for context, message in (({"review_threshhold": "0.7"}, "-c review_threshhold: not a setting"),
                             ({f"{consumer.name}.batch_size": "many"}, f"-c {consumer.name}.batch_size: expected int"),
                             ({f"{consumer.name}.batch_size": "0"}, r"batch_size must be in \[1, 10000\]"),
                             ({"no-such-component.batch_size": "5"}, "no component named 'no-such-component'"),
                             ({"stage": "Prod!"}, "stage must be empty or 1-12 lowercase")):
        with pytest.raises(SettingsError, match=message):
            synthesize(context=context, outdir=str(tmp_path / "b"))


def test_every_function_has_a_concurrency_bound_from_the_settings(template):
    """Backpressure: a consumer is bounded by its event source's MaximumConcurrency, a workflow step, the
    Accept step and the ingest endpoint by their reserved concurrency; no function can take the account's
    whole Lambda concurrency."""
    # A broker's mapping is bounded by its channel (a Kafka poller per partition, one for an Amazon MQ queue).
    mapped = {m["FunctionName"]["Ref"]: m.get("ScalingConfig", {}).get("MaximumConcurrency", 2)
              for m in of_type(template, "AWS::Lambda::EventSourceMapping").values()}
    reserved = {function_of(template, workflow, stem): task.settings.reserved_concurrency for workflow, stem, task in TASKS}
    if PIPELINE.workflows:
        reserved[function_of(template, PIPELINE.workflows[0], ACCEPT_STEM)] = SETTINGS.accept_step.reserved_concurrency
    if SETTINGS.ingest_api:
        reserved[output_id(template, INGEST_FUNCTION_OUTPUT)] = SETTINGS.ingest_function.reserved_concurrency
    for workflow in EXPRESS:  # invoked by its log's subscription: no event source to bound it
        reserved[output_id(template, f"{net(workflow)}{FUNCTION_NAME}")] = SETTINGS.execution_failures.max_concurrency
    functions = of_type(template, "AWS::Lambda::Function")
    assert set(functions) == set(mapped) | set(reserved)
    for logical_id, function in functions.items():
        if logical_id in mapped:
            assert "ReservedConcurrentExecutions" not in function and mapped[logical_id] >= 2
        else:
            assert function["ReservedConcurrentExecutions"] == reserved[logical_id], logical_id


def test_the_ingest_endpoint_is_an_iam_authenticated_function_url_that_puts_on_the_bus(template):
    if not SETTINGS.ingest_api:
        pytest.skip("ingest_api is off")
    function_id = output_id(template, INGEST_FUNCTION_OUTPUT)
    (url,) = of_type(template, "AWS::Lambda::Url").values()
    assert url["AuthType"] == "AWS_IAM" and url["TargetFunctionArn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    assert "Cors" not in url
    variables = of_type(template, "AWS::Lambda::Function")[function_id]["Environment"]["Variables"]
    assert set(variables["RESERVED_SOURCES"].split(",")) == set(RESULT_SOURCES.values())
    (producer_policy,) = of_type(template, "AWS::IAM::ManagedPolicy").values()
    (statement,) = producer_policy["PolicyDocument"]["Statement"]
    assert statement["Action"] == "lambda:InvokeFunctionUrl" and statement["Resource"] == {"Fn::GetAtt": [function_id, "Arn"]}
    role = of_type(template, "AWS::Lambda::Function")[function_id]["Role"]["Fn::GetAtt"][0]
    actions = {a for p in of_type(template, "AWS::IAM::Policy").values() if {"Ref": role} in p["Roles"]
               for s in p["PolicyDocument"]["Statement"] for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])}
    assert actions == {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTraceSegments", "xray:PutTelemetryRecords",
                       "events:PutEvents"}


def test_the_schema_registry_holds_every_contracts_schema_in_draft_4(template):
    from inferbus.model.schemas import draft4, event_schemas

    schemas = {s["SchemaName"]: s for s in of_type(template, "AWS::EventSchemas::Schema").values()}
    expected = event_schemas()
    assert set(schemas) == set(expected)
    for name, schema in schemas.items():
        assert schema["Type"] == "JSONSchemaDraft4"
        assert json.loads(schema["Content"]) == draft4(expected[name])
        assert "$defs" not in schema["Content"] and "draft-04" in schema["Content"]


def test_results_go_to_s3_through_firehose_and_grow_colder_with_age(template):
    buckets = {k: b for k, b in of_type(template, "AWS::S3::Bucket").items() if k.startswith("ResultsArchive")}
    (bucket_id, bucket), = buckets.items()
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert [(t["StorageClass"], t["TransitionInDays"]) for t in rule["Transitions"]] == [
        ("STANDARD_IA", SETTINGS.results_infrequent_access_after_days), ("GLACIER", SETTINGS.results_glacier_after_days)]
    assert rule["ExpirationInDays"] == SETTINGS.results_retention_days
    assert template["Resources"][bucket_id]["DeletionPolicy"] == "Retain"
    (stream,) = of_type(template, "AWS::KinesisFirehose::DeliveryStream").values()
    destination = stream["ExtendedS3DestinationConfiguration"]
    assert destination["BucketARN"] == {"Fn::GetAtt": [bucket_id, "Arn"]} and destination["CompressionFormat"] == "GZIP"
    assert stream["DeliveryStreamEncryptionConfigurationInput"] == {"KeyType": "AWS_OWNED_CMK"}
    (stream_id,) = of_type(template, "AWS::KinesisFirehose::DeliveryStream")
    (archive_rule,) = [r for r in of_type(template, "AWS::Events::Rule").values()
                       if r["Targets"][0]["Arn"] == {"Fn::GetAtt": [stream_id, "Arn"]}]
    assert set(archive_rule["EventPattern"]["source"]) == set(RESULT_SOURCES.values())


def test_lambda_insights_is_on_in_prod_and_adds_a_memory_alarm_per_flow(template, prod_template):
    from infra.constructs.consumer_monitoring import INSIGHTS_ALARMS
    from tests.infra.conftest import PROD_SETTINGS

    assert PROD_SETTINGS.insights_enabled and not SETTINGS.insights_enabled
    insights_policy = "CloudWatchLambdaInsightsExecutionRolePolicy"
    for variant, on in ((template, False), (prod_template, True)):
        for function in of_type(variant, "AWS::Lambda::Function").values():
            assert ("lambdainsightsversion" in json.dumps(function.get("Layers", [])).lower()) is on
            role = of_type(variant, "AWS::IAM::Role")[function["Role"]["Fn::GetAtt"][0]]
            assert (insights_policy in json.dumps(role.get("ManagedPolicyArns", []))) is on
    prod_alarms = of_type(prod_template, "AWS::CloudWatch::Alarm")
    memory = [a for a in prod_alarms.values() if "memory_utilization" in json.dumps(a)]
    flows = [c for c in PIPELINE.producers if not fed_by_broker(c)]  # on a queue, or a workflow
    assert len(memory) == len(INSIGHTS_ALARMS) * (len(flows) + 1)  # and the unrouted-events check
    assert {a["Threshold"] for a in memory} == {PROD_SETTINGS.memory_alarm_percent}
    assert len(prod_alarms) == len(of_type(template, "AWS::CloudWatch::Alarm")) + len(memory)


def test_claims_outlive_every_way_an_event_can_come_back(template):
    # archive replay, then EventBridge's retries, then the queue's DLQ: a claim must still be there
    archive_days = template_archive_days(template)
    for name, function in of_type(template, "AWS::Lambda::Function").items():
        variables = function.get("Environment", {}).get("Variables", {})
        if "IDEMPOTENCY_TTL_SECONDS" not in variables:
            continue
        longest_dlq_days = max(q["MessageRetentionPeriod"] for q in of_type(template, "AWS::SQS::Queue").values()
                               if "MessageRetentionPeriod" in q) / 86_400
        lifetime = int(variables["IDEMPOTENCY_TTL_SECONDS"])
        assert lifetime >= (archive_days + longest_dlq_days) * 86_400 + SETTINGS.target_max_event_age_s, name


def template_archive_days(template):
    (archive,) = of_type(template, "AWS::Events::Archive").values()
    return archive["RetentionDays"]


def test_consumers_claim_with_puts_and_batch_writes_and_accept_with_one_put(template):
    granted = {}
    claims_table = output_id(template, IDEMPOTENCY_TABLE_OUTPUT)  # state tables' reads: tests/infra/test_state_table_template.py
    for policy in of_type(template, "AWS::IAM::Policy").values():
        for statement in policy["PolicyDocument"]["Statement"]:
            if claims_table not in json.dumps(statement["Resource"]):
                continue
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            for role in policy["Roles"]:
                granted.setdefault(role["Ref"], set()).update(a for a in actions if a.startswith("dynamodb:"))
    claimers = {name: actions for name, actions in granted.items() if actions}
    consumers = {output_id(template, c.output_key(FUNCTION_NAME)) for c in PIPELINE.consumers}
    roles = {name: fn["Role"]["Fn::GetAtt"][0] for name, fn in of_type(template, "AWS::Lambda::Function").items()}
    for function, role in roles.items():
        if role not in claimers:
            continue
        expected = {"dynamodb:PutItem", "dynamodb:BatchWriteItem"} if function in consumers else {"dynamodb:PutItem"}
        assert claimers[role] == expected, function


def resolve(value, template, pseudo):
    """A policy resource as a string: Fn::Join, Refs to pseudo parameters, and the bus's Ref (its name)."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(resolve(part, template, pseudo) for part in parts)
    reference = value["Ref"]
    return pseudo.get(reference) or template["Resources"][reference]["Properties"]["Name"]


def test_the_unrouted_check_may_read_the_targets_of_any_rule_on_its_bus_and_no_other_bus(template, tmp_path):
    """A second stack's rule on the bus counts: the check's role may list its targets (its ARN is
    ``rule/<bus>/<name>``, a name the check cannot know at deploy time), and no other bus's."""
    from fnmatch import fnmatchcase

    from aws_cdk import App, Stack
    from aws_cdk import aws_events as events
    from aws_cdk import aws_events_targets as targets
    from aws_cdk import aws_sqs as sqs

    pseudo = {"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012"}
    (bus,) = of_type(template, "AWS::Events::EventBus").values()
    app = App(outdir=str(tmp_path))
    other = Stack(app, "Shipping")
    rule = events.Rule(other, "Delays", event_bus=events.EventBus.from_event_bus_name(other, "Bus", bus["Name"]),
                       event_pattern=events.EventPattern(source=["shipping.app"]))
    rule.add_target(targets.SqsQueue(sqs.Queue(other, "DelaysQueue")))
    (foreign,) = of_type(app.synth().get_stack_by_name("Shipping").template, "AWS::Events::Rule").values()
    assert foreign["EventBusName"] == bus["Name"]
    # CloudFormation names an unnamed rule <stack>-<logical id>-<suffix>; its ARN names the bus it is on
    foreign_arn = f"arn:aws:events:us-east-1:123456789012:rule/{bus['Name']}/Shipping-DelaysA1B2C3-XYZ"

    check_role = of_type(template, "AWS::Lambda::Function")[output_id(template, f"{UNROUTED_CHECK_ID}{FUNCTION_NAME}")]["Role"]
    statements = [s for p in of_type(template, "AWS::IAM::Policy").values() if {"Ref": check_role["Fn::GetAtt"][0]} in p["Roles"]
                  for s in p["PolicyDocument"]["Statement"]]
    (listing,) = [s for s in statements if s["Action"] == "events:ListTargetsByRule"]
    (scope,) = [resolve(r, template, pseudo) for r in (listing["Resource"] if isinstance(listing["Resource"], list)
                                                      else [listing["Resource"]])]
    assert scope == f"arn:aws:events:us-east-1:123456789012:rule/{bus['Name']}/*"
    assert fnmatchcase(foreign_arn, scope)
    assert not fnmatchcase(f"arn:aws:events:us-east-1:123456789012:rule/default/{foreign_arn.rsplit('/', 1)[1]}", scope)
    assert [s["Resource"] for s in statements if s["Action"] == "events:ListRules"] == ["*"]  # takes no resource
