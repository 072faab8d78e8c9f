"""Who may put what on the bus, and the opt-in AWS FIS experiments: assertions on the templates.

The default template and the FIS variant come from session fixtures (tests/conftest.py,
tests/infra/conftest.py); cfn-lint checks every variant in test_template.py.
No experiment is ever started: the templates are checked, not run.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from inferbus.local import LocalPipeline
from inferbus.model.names import DEAD_LETTER_QUEUE_URL, FUNCTION_NAME
from inferbus.model.settings import InferbusSettings
from inferbus.runtime.provision import CLOUD_ONLY, PARTLY_LOCAL, PROVISIONED_TYPES
from infra.constructs.event_bus import SOURCE_TAG
from infra.constructs.fault_injection import CONFIGURATION_PREFIX, EXTENSION_LAYER_PARAMETER, EXTENSION_WRAPPER
from tests.declared import DEMO, PIPELINE, RESULT_SOURCES
from tests.infra.conftest import FIS_SETTINGS
from tests.infra.test_template import UNSCOPABLE, of_type, output_id

SETTINGS = FIS_SETTINGS
ACCOUNT, OTHER_ACCOUNT = "111111111111", "222222222222"
FIS_TYPES = {"AWS::FIS::ExperimentTemplate", "AWS::S3::Bucket", "AWS::S3::BucketPolicy"}
FIS_VARIABLES = {"AWS_LAMBDA_EXEC_WRAPPER", "AWS_FIS_CONFIGURATION_LOCATION", "AWS_FIS_POLL_MAX_WAIT_MILLISECONDS"}
# Besides the unscopable actions the default template has: tag:GetResources, which FIS's Lambda actions require.
FIS_WILDCARD_RESOURCE_ACTIONS = UNSCOPABLE | {"tag:GetResources"}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def get_att(logical_id: str) -> dict:
    return {"Fn::GetAtt": [logical_id, "Arn"]}


def bus_policy(template) -> dict:
    (bus,) = of_type(template, "AWS::Events::EventBus").values()
    return bus["Policy"]


def producers(template) -> dict[str, dict]:
    """``source -> role ARN`` as the template wires it: the role of the function whose
    ``RESULT_SOURCE`` it is, or of the state machine whose ``ResultSource`` it is."""
    found = {}
    for function in of_type(template, "AWS::Lambda::Function").values():
        source = function.get("Environment", {}).get("Variables", {}).get("RESULT_SOURCE")
        if source:
            found[source] = function["Role"]
    for machine in of_type(template, "AWS::StepFunctions::StateMachine").values():
        found[machine["DefinitionSubstitutions"]["ResultSource"]] = machine["RoleArn"]
    return found


def statement_by_sid(policy: dict, sid: str) -> dict:
    (statement,) = [s for s in policy["Statement"] if s["Sid"] == sid]
    return statement


# -- the bus policy ---------------------------------------------------------------------------


def test_the_bus_denies_put_events_to_other_accounts(template):
    policy = bus_policy(template)
    statement = statement_by_sid(policy, "DenyPutEventsFromOtherAccounts")
    assert (statement["Effect"], statement["Principal"], statement["Action"]) == ("Deny", "*", "events:PutEvents")
    assert statement["Condition"] == {"StringNotEquals": {"aws:PrincipalAccount": {"Ref": "AWS::AccountId"}}}
    # The bus's own ARN, built from its name (the bus cannot reference its own attributes).
    resource = json.dumps(statement["Resource"])
    assert '":event-bus/' in resource and f'/{InferbusSettings().bus_name}"' in resource


def test_the_bus_policy_only_denies(template):
    """Deny-only: the policy can take access away, never grant it (producers keep their IAM grants)."""
    statements = bus_policy(template)["Statement"]
    assert {s["Effect"] for s in statements} == {"Deny"}
    assert {s["Action"] for s in statements} == {"events:PutEvents"}
    assert len(statements) == 3  # other accounts, untagged callers, a tag that is not the source: however many producers
    assert len({s["Sid"] for s in statements}) == len(statements)


def test_each_internal_source_is_reserved_and_its_producer_tagged_with_it(template):
    wired = producers(template)
    assert set(wired) == set(RESULT_SOURCES.values())  # every consumer and every workflow
    for sid in ("ReservedSourcesNeedAProducerTag", "ProducersPutOnlyTheirOwnSource"):
        condition = statement_by_sid(bus_policy(template), sid)["Condition"]
        assert condition["ForAnyValue:StringEquals"] == {"events:source": sorted(wired)}
    assert {source: role_tags(template, role).get(SOURCE_TAG) for source, role in wired.items()} == \
        {source: source for source in wired}
    # Besides them, only each workflow's net carries the tag, its workflow's source: it publishes the failure
    # event of an execution that ended outside the workflow's states. No other role may put reserved sources.
    functions = of_type(template, "AWS::Lambda::Function")
    nets = {functions[output_id(template, f"{w.construct_id}ExecutionFailures{FUNCTION_NAME}")]["Role"]["Fn::GetAtt"][0]:
            w.result_source for w in PIPELINE.workflows}
    assert {role_id: role_tags(template, get_att(role_id)).get(SOURCE_TAG) for role_id in nets} == nets
    tagged = [role_id for role_id in of_type(template, "AWS::IAM::Role") if SOURCE_TAG in role_tags(template, get_att(role_id))]
    assert sorted(tagged) == sorted([*(role["Fn::GetAtt"][0] for role in wired.values()), *nets])


def test_no_role_of_the_stack_may_tag_a_principal_or_its_session(template):
    """Who can set the inferbus-source tag can forge a source: none of the stack's roles is given that power."""
    tagging = ("iam:tag", "iam:untag", "iam:createrole", "iam:createuser", "sts:tagsession")
    for policy in of_type(template, "AWS::IAM::Policy").values():
        for statement in policy["PolicyDocument"]["Statement"]:
            actions = [action.lower() for action in as_list(statement["Action"])]
            assert not [a for a in actions if a.startswith(tagging) or a in ("*", "iam:*", "sts:*")], actions
    for role in of_type(template, "AWS::IAM::Role").values():
        trusted = [a.lower() for s in role["AssumeRolePolicyDocument"]["Statement"] for a in as_list(s["Action"])]
        assert "sts:tagsession" not in trusted, trusted


def test_every_producer_keeps_its_own_put_events_grant(template):
    (bus_id,) = of_type(template, "AWS::Events::EventBus")
    for role in producers(template).values():
        role_id = role["Fn::GetAtt"][0]
        statements = [s for p in of_type(template, "AWS::IAM::Policy").values() if {"Ref": role_id} in p["Roles"]
                      for s in p["PolicyDocument"]["Statement"]]
        assert any(s["Effect"] == "Allow" and "events:PutEvents" in as_list(s["Action"])
                   and get_att(bus_id) in as_list(s["Resource"]) for s in statements), role_id


def role_tags(template, role: dict) -> dict[str, str]:
    """The IAM tags of the role that ``{"Fn::GetAtt": [id, "Arn"]}`` names, as the template sets them."""
    properties = template["Resources"][role["Fn::GetAtt"][0]]["Properties"]
    return {tag["Key"]: tag["Value"] for tag in properties.get("Tags", [])}


def _resolve(value: Any) -> Any:
    """Tokens to concrete values: the account, and a role ARN per role logical id."""
    if value == {"Ref": "AWS::AccountId"}:
        return ACCOUNT
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return f"arn:aws:iam::{ACCOUNT}:role/{value['Fn::GetAtt'][0]}"
    return value


class Unresolved(Exception):
    """A policy variable whose key the request does not hold: IAM does not match the statement."""


def _substitute(value: str, context: dict[str, Any]) -> str:
    """``${key}`` -> the request's (single) value for ``key``; keys are case-insensitive."""
    def lookup(match: re.Match) -> str:
        found = {k.lower(): v for k, v in context.items()}.get(match[1].lower())
        if not isinstance(found, str):
            raise Unresolved(match[1])
        return found
    return re.sub(r"\$\{([^}]+)\}", lookup, value)


def _like(actual: str, pattern: str) -> bool:
    """StringLike: * any run of characters, ? one character, the rest literal and case-sensitive."""
    return re.fullmatch("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern), actual,
                        re.DOTALL) is not None


def denied(policy: dict, *, account: str, principal_arn: str, sources: list[str], tags: dict[str, str] | None = None) -> bool:
    """Our reading of IAM for these statements: a Deny applies when every condition holds.

    ``events:source`` is multivalued (ArrayOfString in the Service Authorization Reference): the
    request's sources, one per entry; ``ForAnyValue`` holds when one of them matches one value.
    ``aws:PrincipalTag/<key>`` is single-valued: the caller's tags (a role session: its role's).
    ``Null: true`` holds when the key is absent. A policy variable is replaced by the request's
    value; when the request has no such key, the statement does not apply. This only reads the
    policy; that EventBridge evaluates it this way is what remains to confirm on a real account.
    """
    context: dict[str, Any] = {"aws:PrincipalAccount": account, "aws:PrincipalArn": principal_arn,
                               "events:source": sources}
    context.update({f"aws:PrincipalTag/{key}": value for key, value in (tags or {}).items()})
    operators = {
        "StringNotEquals": lambda actual, allowed: actual is None or actual not in allowed,
        "ForAnyValue:StringEquals": lambda actual, allowed: any(value in allowed for value in actual or []),
        "ForAnyValue:StringNotLike": lambda actual, patterns: any(not any(_like(value, p) for p in patterns)
                                                                  for value in actual or []),
        "Null": lambda actual, absent: (actual is None) == ({"true": True, "false": False}[absent[0]]),
    }

    def holds(operator: str, key: str, values: Any) -> bool:
        resolved = [_resolve(v) for v in as_list(values)]
        if operator != "Null":
            resolved = [_substitute(v, context) if isinstance(v, str) else v for v in resolved]
        return operators[operator](context.get(key), resolved)

    for statement in policy["Statement"]:
        try:
            if all(holds(operator, key, values) for operator, keys in statement["Condition"].items()
                   for key, values in keys.items()):
                return True
        except Unresolved:
            continue
    return False


def test_the_evaluator_reads_iam_as_documented():
    """The evaluator's own cases, so the guarantees below cannot pass on a misreading."""
    tag = f"aws:PrincipalTag/{SOURCE_TAG}"
    statement = {"Condition": {"ForAnyValue:StringNotLike": {"events:source": "${" + tag + "}"}}}
    policy = {"Statement": [statement]}
    me = {"account": ACCOUNT, "principal_arn": f"arn:aws:iam::{ACCOUNT}:role/r"}
    assert denied(policy, **me, sources=["a", "b"], tags={SOURCE_TAG: "a"})
    assert not denied(policy, **me, sources=["a", "a"], tags={SOURCE_TAG: "a"})
    assert not denied(policy, **me, sources=["a"])  # an unresolved variable: the statement does not apply
    assert denied({"Statement": [{"Condition": {"Null": {tag: "true"}}}]}, **me, sources=["a"])
    assert not denied({"Statement": [{"Condition": {"Null": {tag: "true"}}}]}, **me, sources=["a"], tags={SOURCE_TAG: ""})
    assert not denied({"Statement": [{"Condition": {"ForAnyValue:StringEquals": {"events:source": ["x"]}}}]},
                      **me, sources=[])
    assert _like("inferbus.a", "inferbus.*") and not _like("inferbus.a", "inferbus.b") and not _like("Inferbus.a", "inferbus.a")


def test_the_policy_never_blocks_a_producer_and_blocks_every_forgery(template):
    policy = bus_policy(template)
    roles = {source: (_resolve(role), role_tags(template, role)) for source, role in producers(template).items()}
    internal = sorted(roles)
    for source, (role, tags) in roles.items():
        assert not denied(policy, account=ACCOUNT, principal_arn=role, tags=tags, sources=[source]), source
        assert not denied(policy, account=ACCOUNT, principal_arn=role, tags=tags, sources=[source] * 10), source
        for other in internal:
            if other != source:  # one producer cannot put another's results, alone or mixed in
                assert denied(policy, account=ACCOUNT, principal_arn=role, tags=tags, sources=[other])
                assert denied(policy, account=ACCOUNT, principal_arn=role, tags=tags, sources=[source, other])
                assert denied(policy, account=ACCOUNT, principal_arn=role, tags=tags, sources=[other, source])
    user = f"arn:aws:iam::{ACCOUNT}:user/developer"
    for outside_source in ("inferbus.demo", "inferbus.cli", "my.producer"):  # what people put on the bus
        assert not denied(policy, account=ACCOUNT, principal_arn=user, sources=[outside_source])
    for source in internal:
        assert denied(policy, account=ACCOUNT, principal_arn=user, sources=[source])
        assert denied(policy, account=ACCOUNT, principal_arn=user, sources=["my.producer", source])
    # A role of the account tagged with some other source (an unreserved one, or one that is not a
    # result source at all) is refused every reserved source, alone or mixed, and keeps its own.
    tagged = f"arn:aws:iam::{ACCOUNT}:role/tagged-elsewhere"
    for foreign in ("inferbus.demo", "my.producer", ""):
        tags = {SOURCE_TAG: foreign}
        if foreign:
            assert not denied(policy, account=ACCOUNT, principal_arn=tagged, tags=tags, sources=[foreign])
        for source in internal:
            assert denied(policy, account=ACCOUNT, principal_arn=tagged, tags=tags, sources=[source])
            assert denied(policy, account=ACCOUNT, principal_arn=tagged, tags=tags, sources=[foreign, source])
    stranger = f"arn:aws:iam::{OTHER_ACCOUNT}:role/{next(iter(roles.values()))[0].rsplit('/', 1)[1]}"
    stranger_tags = next(iter(roles.values()))[1]  # even a copy of a producer's tag in another account
    assert denied(policy, account=OTHER_ACCOUNT, principal_arn=stranger, sources=["my.producer"])
    assert denied(policy, account=OTHER_ACCOUNT, principal_arn=stranger, tags=stranger_tags, sources=[internal[0]])
    assert denied(policy, account=OTHER_ACCOUNT, principal_arn=stranger, tags=stranger_tags,
                  sources=[stranger_tags[SOURCE_TAG]])


def _resolved(value: Any) -> Any:
    if isinstance(value, dict) and set(value) != {"Ref"} and "Fn::GetAtt" not in value:
        return {key: _resolved(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolved(item) for item in value]
    return _resolve(value)


def test_the_local_twin_reads_the_bus_policy_as_this_module_does(template):
    """The twin enforces the template's policy (inferbus/runtime/resource_policy.py): on every caller and every mix
    of sources, it denies exactly what the reading above denies."""
    from inferbus.runtime.resource_policy import Principal, put_events_denial

    policy = _resolved(bus_policy(template))
    roles = {source: (_resolve(role), role_tags(template, role)) for source, role in producers(template).items()}
    internal = sorted(roles)
    callers = [(ACCOUNT, arn, tags) for arn, tags in roles.values()] + [
        (ACCOUNT, f"arn:aws:iam::{ACCOUNT}:user/developer", {}),
        (ACCOUNT, f"arn:aws:iam::{ACCOUNT}:role/tagged-elsewhere", {SOURCE_TAG: "my.producer"}),
        (OTHER_ACCOUNT, f"arn:aws:iam::{OTHER_ACCOUNT}:role/stranger", next(iter(roles.values()))[1])]
    mixes = [[source] for source in internal] + [["my.producer"], ["my.producer", internal[0]], internal[:2],
                                                 [internal[-1]] * 3, [internal[0].upper()]]
    for account, arn, tags in callers:
        for sources in mixes:
            twin = put_events_denial(policy, Principal(arn, account, tags), sources=sources, detail_types=["T"] * len(sources))
            assert (twin is not None) == denied(policy, account=account, principal_arn=arn, sources=sources, tags=tags), \
                (arn, sources)


def test_restrict_sources_refuses_what_it_cannot_guard():
    from aws_cdk import App, Stack
    from aws_cdk import aws_iam as iam

    from infra.constructs.event_bus import InferbusBus

    stack = Stack(App(), "Guard")
    bus = InferbusBus(stack, "Bus", bus_name="guard", archive_retention_days=1)
    role = iam.Role(stack, "Producer", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    with pytest.raises(ValueError, match="at least one source"):
        bus.restrict_sources({})
    with pytest.raises(ValueError, match="aws.s3"):
        bus.restrict_sources({"aws.s3": role})
    bus.restrict_sources({"guard.producer": role})
    with pytest.raises(ValueError, match="already restricted"):
        bus.restrict_sources({"guard.other": role})


def test_the_embedded_runtime_provisions_the_guarded_bus_with_its_policy_and_says_what_it_enforces(template):
    with LocalPipeline(template, tap=False) as pipeline:
        assert pipeline.bus_name == InferbusSettings().bus_name
        listed = {(kind, why) for _, kind, why in pipeline.deployment.partly_local}
        assert ("AWS::Events::EventBus", PARTLY_LOCAL["AWS::Events::EventBus"]) in listed
        assert "Deny statements on PutEvents are enforced" in PARTLY_LOCAL["AWS::Events::EventBus"]
        provisioned = json.loads(pipeline.events.describe_event_bus(Name=pipeline.bus_name)["Policy"])
        assert [s["Sid"] for s in provisioned["Statement"]] == [s["Sid"] for s in bus_policy(template)["Statement"]]
        assert not [note for _, kind, note in pipeline.deployment.partly_local if "not enforced locally" in note]
        unexplained = [e for e in pipeline.deployment.cloud_only if e[2] == "not emulated by the embedded runtime"]
        assert not unexplained


# -- the FIS variant -----------------------------------------------------------------------------


def experiment_templates(template) -> dict[str, dict]:
    return {props["Actions"][next(iter(props["Actions"]))]["ActionId"]: props
            for props in of_type(template, "AWS::FIS::ExperimentTemplate").values()}


def zip_function_arns(template) -> list[dict]:
    functions = of_type(template, "AWS::Lambda::Function")
    return [get_att(k) for k, f in functions.items() if f.get("PackageType") != "Image"]


def the_bucket(template) -> str:
    """The FIS configuration bucket (the results archive has a bucket of its own)."""
    (bucket_id,) = [k for k in of_type(template, "AWS::S3::Bucket") if k.startswith("FaultInjection")]
    return bucket_id


def test_the_default_template_has_no_fault_injection(template):
    assert not of_type(template, "AWS::FIS::ExperimentTemplate")
    assert not [k for k in template["Resources"] if k.startswith("FaultInjection")]
    function_roles = set()
    for function in of_type(template, "AWS::Lambda::Function").values():
        assert "Layers" not in function
        assert not set(function["Environment"]["Variables"]) & FIS_VARIABLES
        function_roles.add(json.dumps({"Ref": function["Role"]["Fn::GetAtt"][0]}))
    assert "fis" not in json.dumps(template.get("Parameters", {})).lower()
    function_policies = [p["PolicyDocument"] for p in of_type(template, "AWS::IAM::Policy").values()
                         if {json.dumps(role) for role in p["Roles"]} & function_roles]
    assert function_policies and "s3:" not in json.dumps(function_policies)


def test_two_experiment_templates_fail_and_delay_invocations(fis_template):
    experiments = experiment_templates(fis_template)
    assert set(experiments) == {"aws:lambda:invocation-error", "aws:lambda:invocation-add-delay"}
    for action_id, experiment in experiments.items():
        for action in experiment["Actions"].values():
            assert action["ActionId"] == action_id
            parameters = action["Parameters"]
            assert parameters["duration"] == "PT10M"
            assert 1 <= int(parameters["invocationPercentage"]) <= 100
            (target_key,) = action["Targets"]
            assert target_key == "Functions" and action["Targets"]["Functions"] in experiment["Targets"]
        assert experiment["LogConfiguration"]["LogSchemaVersion"] == 2
    errors = experiments["aws:lambda:invocation-error"]["Actions"].values()
    # Fail before the handler runs, as the local error_rate does: a failed invocation has no side effects.
    assert {a["Parameters"]["preventExecution"] for a in errors} == {"true"}
    delays = experiments["aws:lambda:invocation-add-delay"]["Actions"].values()
    assert all(0 < int(a["Parameters"]["startupDelayMilliseconds"]) <= 900_000 for a in delays)


def test_the_experiments_target_exactly_inferbus_functions_by_arn(fis_template):
    expected = zip_function_arns(fis_template)
    tasks = sum(len(w.tasks) for w in PIPELINE.workflows)
    # + the unrouted-events check, the shared Accept step, the ingest endpoint and each workflow's net
    assert len(expected) == len(PIPELINE.consumers) + tasks + 1 + bool(PIPELINE.workflows) + SETTINGS.ingest_api + len(
        PIPELINE.workflows)
    for experiment in experiment_templates(fis_template).values():
        targets = experiment["Targets"].values()
        arns = [arn for target in targets for arn in target["ResourceArns"]]
        assert sorted(map(json.dumps, arns)) == sorted(map(json.dumps, expected))  # each once, no other
        for target in targets:
            assert target["ResourceType"] == "aws:lambda:function" and target["SelectionMode"] == "ALL"
            assert 1 <= len(target["ResourceArns"]) <= 5  # FIS: 5 resource ARNs per target
            assert "ResourceTags" not in target and "Filters" not in target
        # every target is hit by exactly one action
        used = sorted(a["Targets"]["Functions"] for a in experiment["Actions"].values())
        assert used == sorted(experiment["Targets"])


def test_every_experiment_stops_when_any_work_is_lost(fis_template):
    """Stop conditions watch every consumer's DLQ and every workflow's failed executions, in at
    most 5 alarms (FIS's limit) of at most 10 metrics each (a metric-math alarm's)."""
    alarms = of_type(fis_template, "AWS::CloudWatch::Alarm")
    consumer_dlqs = {output_id(fis_template, c.output_key(DEAD_LETTER_QUEUE_URL)) for c in PIPELINE.consumers}
    machines = set(of_type(fis_template, "AWS::StepFunctions::StateMachine"))
    for experiment in experiment_templates(fis_template).values():
        conditions = experiment["StopConditions"]
        assert 1 <= len(conditions) <= 5
        assert {c["Source"] for c in conditions} == {"aws:cloudwatch:alarm"}
        named = [c["Value"]["Fn::GetAtt"][0] for c in conditions]
        watched_queues, watched_machines = set(), set()
        for alarm_id in named:
            stats = [m["MetricStat"]["Metric"] for m in alarms[alarm_id]["Metrics"] if "MetricStat" in m]
            assert 1 <= len(stats) <= 10
            for metric in stats:
                (dimension,) = metric["Dimensions"]
                target = dimension["Value"]["Fn::GetAtt"][0] if "Fn::GetAtt" in dimension["Value"] else dimension["Value"]["Ref"]
                if metric["MetricName"] == "ApproximateNumberOfMessagesVisible":
                    watched_queues.add(target)
                else:
                    assert metric["MetricName"] == "ExecutionsFailed"
                    watched_machines.add(target)
        assert watched_queues == consumer_dlqs and watched_machines == machines


def test_the_experiment_role_is_least_privilege(fis_template):
    experiments = list(experiment_templates(fis_template).values())
    (role_arn,) = {json.dumps(e["RoleArn"]) for e in experiments}
    role_id = json.loads(role_arn)["Fn::GetAtt"][0]
    role = of_type(fis_template, "AWS::IAM::Role")[role_id]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "fis.amazonaws.com"}
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert json.dumps(trust["Condition"]["ArnLike"]["aws:SourceArn"]).endswith(':experiment/*"]]}')
    assert "ManagedPolicyArns" not in role and "Policies" not in role
    statements = [s for p in of_type(fis_template, "AWS::IAM::Policy").values() if {"Ref": role_id} in p["Roles"]
                  for s in p["PolicyDocument"]["Statement"]]
    by_action = {action: as_list(s["Resource"]) for s in statements for action in as_list(s["Action"])}
    assert set(by_action) == {"s3:PutObject", "s3:DeleteObject", "lambda:GetFunction", "tag:GetResources",
                              "logs:CreateLogDelivery", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies",
                              "logs:DescribeLogGroups"}
    objects = {"Fn::Join": ["", [get_att(the_bucket(fis_template)), f"/{CONFIGURATION_PREFIX}*"]]}
    assert by_action["s3:PutObject"] == by_action["s3:DeleteObject"] == [objects]
    targets = zip_function_arns(fis_template)
    assert sorted(map(json.dumps, by_action["lambda:GetFunction"])) == sorted(map(json.dumps, targets))
    assert {a for a, resources in by_action.items() if "*" in resources} <= FIS_WILDCARD_RESOURCE_ACTIONS


def test_no_wildcard_actions_and_only_unscopable_actions_on_any_resource_in_the_fis_variant(fis_template):
    """The IAM walk of test_template, on the FIS variant."""
    for policy in of_type(fis_template, "AWS::IAM::Policy").values():
        for statement in policy["PolicyDocument"]["Statement"]:
            actions = as_list(statement["Action"])
            assert not any("*" in action for action in actions), actions
            resources = as_list(statement["Resource"])
            assert not any(isinstance(r, str) and r != "*" and "*" in r for r in resources), resources
            if "*" in resources:
                assert set(actions) <= FIS_WILDCARD_RESOURCE_ACTIONS, actions
    for role in of_type(fis_template, "AWS::IAM::Role").values():
        assert "ManagedPolicyArns" not in role


def test_the_configuration_bucket_is_private_encrypted_tls_only_and_short_lived(fis_template):
    bucket_id = the_bucket(fis_template)
    bucket = of_type(fis_template, "AWS::S3::Bucket")[bucket_id]
    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
    assert bucket["PublicAccessBlockConfiguration"] == dict.fromkeys(
        ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"), True)
    assert bucket["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert bucket["LifecycleConfiguration"]["Rules"] == [
        {"ExpirationInDays": 1, "Prefix": CONFIGURATION_PREFIX, "Status": "Enabled"}]
    (policy,) = [p for p in of_type(fis_template, "AWS::S3::BucketPolicy").values() if p["Bucket"] == {"Ref": bucket_id}]
    conditions = [s["Condition"] for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert {"Bool": {"aws:SecureTransport": "false"}} in conditions
    assert {"NumericLessThan": {"s3:TlsVersion": 1.2}} in conditions


def test_only_the_targeted_functions_carry_the_extension_and_read_only_its_prefix(fis_template):
    bucket = get_att(the_bucket(fis_template))
    location = {"Fn::Join": ["", [bucket, f"/{CONFIGURATION_PREFIX}"]]}
    (parameter_id,) = [k for k, p in fis_template["Parameters"].items() if "fis" in p.get("Default", "")]
    parameter = fis_template["Parameters"][parameter_id]
    assert parameter == {"Type": "AWS::SSM::Parameter::Value<String>",
                         "Default": EXTENSION_LAYER_PARAMETER.format(architecture=SETTINGS.lambda_architecture)}
    policies = of_type(fis_template, "AWS::IAM::Policy")
    for function_id, function in of_type(fis_template, "AWS::Lambda::Function").items():
        assert function["Layers"] == [{"Ref": parameter_id}]
        variables = function["Environment"]["Variables"]
        assert variables["AWS_LAMBDA_EXEC_WRAPPER"] == EXTENSION_WRAPPER
        assert variables["AWS_FIS_CONFIGURATION_LOCATION"] == location
        assert int(variables["AWS_FIS_POLL_MAX_WAIT_MILLISECONDS"]) > 0  # AWS's advice with preventExecution
        role_id = function["Role"]["Fn::GetAtt"][0]
        s3 = [s for p in policies.values() if {"Ref": role_id} in p["Roles"] for s in p["PolicyDocument"]["Statement"]
              if any(a.startswith("s3:") for a in as_list(s["Action"]))]
        assert sorted((s["Action"], json.dumps(s["Resource"]), json.dumps(s.get("Condition"))) for s in s3) == sorted([
            ("s3:GetObject", json.dumps({"Fn::Join": ["", [bucket, f"/{CONFIGURATION_PREFIX}*"]]}), "null"),
            ("s3:ListBucket", json.dumps(bucket),
             json.dumps({"StringLike": {"s3:prefix": [f"{CONFIGURATION_PREFIX}*"]}})),
        ]), function_id


def _without_fault_injection(template: dict, bucket_id: str) -> dict:
    """The FIS variant with what fault injection adds taken out again."""
    stripped = copy.deepcopy(template)
    resources = stripped["Resources"]
    for logical_id in [k for k in resources if k.startswith("FaultInjection")]:
        del resources[logical_id]
    for resource in resources.values():
        props = resource["Properties"]
        if resource["Type"] == "AWS::Lambda::Function":
            props.pop("Layers")
            for name in FIS_VARIABLES:
                del props["Environment"]["Variables"][name]
        if resource["Type"] == "AWS::IAM::Policy":
            props["PolicyDocument"]["Statement"] = [s for s in props["PolicyDocument"]["Statement"]
                                                    if bucket_id not in json.dumps(s)]
    stripped["Parameters"] = {k: p for k, p in stripped["Parameters"].items() if "fis" not in p.get("Default", "")}
    return stripped


def test_the_setting_adds_fault_injection_and_changes_nothing_else(template, fis_template):
    added = {fis_template["Resources"][k]["Type"] for k in set(fis_template["Resources"]) - set(template["Resources"])}
    assert added == FIS_TYPES | {"AWS::IAM::Role", "AWS::IAM::Policy", "AWS::Logs::LogGroup", "AWS::CloudWatch::Alarm"}
    assert _without_fault_injection(fis_template, the_bucket(fis_template)) == template


def test_the_embedded_runtime_says_why_each_resource_type_is_or_is_not_local(template, fis_template):
    known = set(CLOUD_ONLY) | set(PARTLY_LOCAL) | PROVISIONED_TYPES
    for variant in (template, fis_template):
        assert {r["Type"] for r in variant["Resources"].values()} <= known
    assert FIS_TYPES <= set(CLOUD_ONLY)


def test_the_setting_is_validated():
    from inferbus.model.settings import SettingsError

    with pytest.raises(SettingsError, match="fault_injection_experiments"):
        InferbusSettings(fault_injection_experiments="yes")  # type: ignore[arg-type]


def test_the_fis_variant_still_runs_embedded(fis_template):
    """The experiments are cloud-only; the pipeline they would fault still runs locally, unchanged."""

    from inferbus_lambda.contracts import to_put_events_entry

    from inferbus.demo.inputs import sample_events

    consumer = next(c for c in PIPELINE.consumers if c.name in DEMO)
    ((event, _),) = sample_events(consumer, 1, source="fis.test")
    with LocalPipeline(fis_template) as pipeline:
        assert pipeline.put_events([to_put_events_entry(event, pipeline.bus_name)]) == []
        pipeline.drain()
        results = [e for e in pipeline.tapped_events() if e["detail-type"] == consumer.result_type]
        assert [e["detail"]["subject"] for e in results] == [event.id]


def test_fault_injection_scales_past_fis_limits_with_many_consumers(tmp_path):
    """FIS takes 5 stop conditions, 10 metrics an alarm and 5 ARNs a target: a pipeline of 12 consumers
    (past one alarm's metrics and one stop condition each) still synthesizes, every DLQ watched. However many the
    pipeline declares, it is filled up to 12, not beyond (each consumer adds about 25 resources, and a stack
    holds at most 500)."""
    import dataclasses

    from inferbus.model.declarations import Pipeline
    from inferbus.template import synthesize

    crowded_consumers = 12
    extra = tuple(dataclasses.replace(PIPELINE.consumers[0], name=f"extra-consumer-{i}")
                  for i in range(max(1, crowded_consumers - len(PIPELINE.consumers))))
    crowded = Pipeline(PIPELINE.consumers + extra, PIPELINE.workflows, PIPELINE.routes)
    template = synthesize(FIS_SETTINGS, pipeline=crowded, outdir=str(tmp_path))
    alarms = of_type(template, "AWS::CloudWatch::Alarm")
    for experiment in experiment_templates(template).values():
        assert 1 <= len(experiment["StopConditions"]) <= 5
        watched = {m["MetricStat"]["Metric"]["Dimensions"][0]["Value"]["Fn::GetAtt"][0]
                   for c in experiment["StopConditions"] for m in alarms[c["Value"]["Fn::GetAtt"][0]]["Metrics"]
                   if "MetricStat" in m and m["MetricStat"]["Metric"]["MetricName"] == "ApproximateNumberOfMessagesVisible"}
        assert watched == {output_id(template, c.output_key(DEAD_LETTER_QUEUE_URL)) for c in crowded.consumers}
        assert all(len(target["ResourceArns"]) <= 5 for target in experiment["Targets"].values())
