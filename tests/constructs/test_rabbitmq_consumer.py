"""A RabbitMQ-fed consumer: Lambda's Amazon MQ mapping on the declared queue with its credential, the broker
private and logging when the stack makes it, least-privilege grants, a DLQ; and the whole passes the cdk-nag gate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from aws_cdk.assertions import Match

from tests.constructs.rabbitmq_consumer_stack import EXISTING_BROKER, OWN_BROKER, add_consumer

ROOT = Path(__file__).resolve().parents[2]


def statements(template) -> list[dict]:
    return [s for p in template.find_resources("AWS::IAM::Policy").values() for s in p["Properties"]["PolicyDocument"]["Statement"]]


def test_an_existing_broker_is_read_through_its_arn_and_secret_with_the_declared_batch(synth):
    template = synth(lambda stack: add_consumer(stack, EXISTING_BROKER))
    queue, settings = EXISTING_BROKER.broker, EXISTING_BROKER.settings
    template.has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "EventSourceArn": queue.broker_arn, "Queues": [queue.queue], "BatchSize": settings.batch_size,
        "MaximumBatchingWindowInSeconds": settings.max_batching_window_s,
        "SourceAccessConfigurations": [{"Type": "BASIC_AUTH", "URI": queue.credentials_secret_arn},
                                       {"Type": "VIRTUAL_HOST", "URI": queue.virtual_host}]})
    assert template.find_resources("AWS::AmazonMQ::Broker") == {}
    assert template.find_resources("AWS::SecretsManager::Secret") == {}
    assert template.find_resources("AWS::EC2::VPC") == {}


def test_the_role_may_describe_that_broker_read_that_secret_and_manage_network_interfaces_only(synth):
    template = synth(lambda stack: add_consumer(stack, EXISTING_BROKER))
    granted = {(a if isinstance(a, str) else tuple(a), str(s["Resource"])) for s in statements(template)
               for a in [s["Action"]]}
    queue = EXISTING_BROKER.broker
    assert ("mq:DescribeBroker", queue.broker_arn) in granted
    assert ("secretsmanager:GetSecretValue", queue.credentials_secret_arn) in granted
    wildcard = {action for action, resource in granted if resource == "*"}
    assert wildcard == {("xray:PutTraceSegments", "xray:PutTelemetryRecords"),
                        ("ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface", "ec2:DescribeNetworkInterfaces",
                         "ec2:DescribeSecurityGroups", "ec2:DescribeSubnets", "ec2:DescribeVpcs")}
    assert not any("mq:*" in str(s["Action"]) or "secretsmanager:*" in str(s["Action"]) for s in statements(template))
    mapping = next(iter(template.find_resources("AWS::Lambda::EventSourceMapping").values()))
    assert any("DefaultPolicy" in dependency for dependency in mapping["DependsOn"])  # grants before polling


def test_the_stacks_broker_is_private_encrypted_logging_and_its_password_only_a_secret_reference(synth):
    template = synth(lambda stack: add_consumer(stack, OWN_BROKER))
    (broker,) = template.find_resources("AWS::AmazonMQ::Broker").values()
    props = broker["Properties"]
    assert (props["EngineType"], props["PubliclyAccessible"], props["Logs"], props["EncryptionOptions"]) == (
        "RABBITMQ", False, {"General": True}, {"UseAwsOwnedKey": True})
    assert len(props["SubnetIds"]) == 1 and props["SecurityGroups"]
    (user,) = props["Users"]
    assert all("{{resolve:secretsmanager:" in str(user[field]) for field in ("Username", "Password"))
    template.has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "EventSourceArn": {"Fn::GetAtt": [Match.string_like_regexp("Broker"), "Arn"]},
        "Queues": [OWN_BROKER.broker.queue],
        "SourceAccessConfigurations": [{"Type": "BASIC_AUTH", "URI": {"Ref": Match.string_like_regexp("BrokerCredential")}},
                                       {"Type": "VIRTUAL_HOST", "URI": "/shop"}]})
    # no route out: isolated subnets, no internet or NAT gateway; the pollers reach AWS through endpoints
    assert template.find_resources("AWS::EC2::InternetGateway") == {} and template.find_resources("AWS::EC2::NatGateway") == {}
    endpoints = {str(e["Properties"]["ServiceName"]) for e in template.find_resources("AWS::EC2::VPCEndpoint").values()}
    assert {name for name in ("lambda", "sts", "secretsmanager") if any(f".{name}" in e for e in endpoints)} == {
        "lambda", "sts", "secretsmanager"}
    ingress = template.find_resources("AWS::EC2::SecurityGroupIngress")
    assert ingress and all("CidrIp" not in rule["Properties"] for rule in ingress.values())  # only from its own group


def test_the_dlq_takes_what_the_consumer_sets_aside_encrypted_and_for_the_declared_retention(synth):
    template = synth(lambda stack: add_consumer(stack, OWN_BROKER))
    template.has_resource_properties("AWS::SQS::Queue", {
        "SqsManagedSseEnabled": True, "MessageRetentionPeriod": OWN_BROKER.settings.dlq_retention_days * 86_400})
    sends = [s for s in statements(template) if "sqs:SendMessage" in s["Action"]]
    assert len(sends) == 1


def test_rabbitmq_consumers_pass_the_cdk_nag_gate(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'functions'}"}
    result = subprocess.run([sys.executable, "-m", "tests.constructs.rabbitmq_consumer_stack", str(tmp_path)],
                            capture_output=True, text=True, timeout=300, cwd=ROOT, env=env, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "OwnBroker.template.json").exists() and (tmp_path / "ExistingBroker.template.json").exists()


def test_the_diagram_draws_each_rabbitmq_queue_naming_your_producers_into_its_consumer_and_its_dlq(synth):
    from aws_cdk import aws_events as events

    from inferbus.diagram import topology

    def build(stack):
        events.EventBus(stack, "Bus", event_bus_name="bus")
        return [add_consumer(stack, declaration) for declaration in (OWN_BROKER, EXISTING_BROKER)]

    template = synth(build).to_json()
    graph = topology(template=template)
    inboxes = {n: graph.nodes[n]["lines"] for n in graph if n.startswith("rabbitmq:")}
    assert sorted(lines[0] for lines in inboxes.values()) == [f"RabbitMQ queue {d.broker.queue}"
                                                             for d in (EXISTING_BROKER, OWN_BROKER)]
    assert sorted(lines[1] for lines in inboxes.values()) == ["Amazon MQ broker in the stack", "Amazon MQ broker inferbus-rabbit"]
    for inbox in inboxes:
        (consumer,) = graph.successors(inbox)
        assert graph.nodes[consumer]["kind"] == "function"
        # Its producers are named in the box: an arrow from the producers' column would cross the bus bar.
        assert inboxes[inbox][2] == "your producers publish (AMQP)" and graph.in_degree(inbox) == 0
        assert any(graph.nodes[n]["kind"] == "dlq" and graph.edges[consumer, n]["label"] == "last attempt + reason"
                   for n in graph.successors(consumer))


def test_the_consumer_is_told_its_dlq_and_its_last_attempt(synth):
    template = synth(lambda stack: add_consumer(stack, OWN_BROKER))
    (function,) = [f for f in template.find_resources("AWS::Lambda::Function").values()
                   if f["Properties"].get("Handler") == OWN_BROKER.handler]
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables["MAX_RECEIVE_COUNT"] == str(OWN_BROKER.settings.max_receive_count)
    (dlq,) = template.find_resources("AWS::SQS::Queue")
    assert variables["DEAD_LETTER_QUEUE_URL"] == {"Ref": dlq}
