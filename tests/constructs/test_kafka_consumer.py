"""A ``kafka`` consumer, derived from its declaration: the event source mapping reads the declared topic as
its group, with the declared batching, retries and on-failure queue; the role reads that topic and group
only; a bridge's pipe puts a topic's CloudEvents on the bus; the whole passes the cdk-nag gate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.constructs.kafka_consumer_stack import BRIDGE, MSK, SELF_MANAGED, add_bridge, add_consumer

ROOT = Path(__file__).resolve().parents[2]


def mapping(template) -> dict:
    (props,) = [m["Properties"] for m in template.find_resources("AWS::Lambda::EventSourceMapping").values()]
    return props


def statements(template, prefix: str) -> list[dict]:
    return [statement for lid, policy in template.find_resources("AWS::IAM::Policy").items() if lid.startswith(prefix)
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]]


def test_an_msk_consumer_reads_its_topic_as_its_group_with_the_declared_batch_and_retries(synth):
    template = synth(add_consumer)
    props = mapping(template)
    topic = MSK.broker
    assert props["EventSourceArn"] == topic.cluster_arn and props["Topics"] == [topic.topic]
    assert props["AmazonManagedKafkaEventSourceConfig"] == {"ConsumerGroupId": MSK.name}
    assert (props["BatchSize"], props["MaximumBatchingWindowInSeconds"], props["StartingPosition"]) == (
        topic.batch_size, topic.max_batching_window_s, topic.starting_position)
    assert props["MaximumRetryAttempts"] == MSK.settings.max_receive_count - 1
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    failure = props["DestinationConfig"]["OnFailure"]["Destination"]
    (queue_id,) = template.find_resources("AWS::SQS::Queue")
    assert failure == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert template.find_resources("AWS::SQS::Queue")[queue_id]["Properties"]["SqsManagedSseEnabled"]


def test_the_consumers_role_may_read_only_its_topic_and_group(synth):
    template = synth(add_consumer)
    topic = MSK.broker
    found = statements(template, MSK.construct_id)
    kafka = {(a, s["Resource"]) for s in found for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
             if a.startswith("kafka-cluster:")}
    assert kafka == {("kafka-cluster:Connect", topic.cluster_arn), ("kafka-cluster:DescribeCluster", topic.cluster_arn),
                     ("kafka-cluster:DescribeTopic", topic.topic_arn), ("kafka-cluster:ReadData", topic.topic_arn),
                     ("kafka-cluster:DescribeGroup", topic.group_arn(MSK.name)),
                     ("kafka-cluster:AlterGroup", topic.group_arn(MSK.name))}
    assert not any("kafka-cluster:*" in str(s["Action"]) or "WriteData" in str(s["Action"]) for s in found)


def test_a_self_managed_consumer_authenticates_with_its_scram_secret_and_reads_nothing_else(synth):
    template = synth(lambda stack: add_consumer(stack, SELF_MANAGED))
    props = mapping(template)
    topic = SELF_MANAGED.broker
    assert props["SelfManagedEventSource"] == {"Endpoints": {"KafkaBootstrapServers": list(topic.bootstrap_servers)}}
    assert props["SourceAccessConfigurations"] == [{"Type": "SASL_SCRAM_512_AUTH", "URI": topic.secret_arn}]
    assert props["SelfManagedKafkaEventSourceConfig"] == {"ConsumerGroupId": "orders-scoring"}
    assert (props["BatchSize"], props["MaximumBatchingWindowInSeconds"], props["StartingPosition"]) == (100, 5, "LATEST")
    found = statements(template, SELF_MANAGED.construct_id)
    assert not any(str(s["Action"]).count("kafka") for s in found)
    assert any(s["Action"] == "secretsmanager:GetSecretValue" and s["Resource"] == topic.secret_arn for s in found)


def test_a_bridge_pipes_the_topic_onto_the_bus_as_its_events_type_and_source(synth):
    template = synth(add_bridge)
    (pipe,) = [p["Properties"] for p in template.find_resources("AWS::Pipes::Pipe").values()]
    assert pipe["Source"] == BRIDGE.broker.cluster_arn
    kafka = pipe["SourceParameters"]["ManagedStreamingKafkaParameters"]
    assert (kafka["TopicName"], kafka["ConsumerGroupID"], kafka["BatchSize"]) == ("payments", "payments-in", 500)
    target = pipe["TargetParameters"]
    assert target["InputTemplate"] == "<$.value>"
    assert target["EventBridgeEventBusParameters"] == {"DetailType": "$.value.type", "Source": "$.value.source"}
    found = statements(template, "PaymentsIn")
    assert any(s["Action"] == "events:PutEvents" for s in found)
    assert {("kafka-cluster:ReadData", BRIDGE.broker.topic_arn)} <= {
        (a, s["Resource"]) for s in found for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        if isinstance(s["Resource"], str)}


def test_kafka_consumers_and_a_bridge_pass_the_cdk_nag_gate(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'functions'}"}
    result = subprocess.run([sys.executable, "-m", "tests.constructs.kafka_consumer_stack", str(tmp_path)],
                            capture_output=True, text=True, timeout=300, cwd=ROOT, env=env, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "Kafka.template.json").exists()


def test_the_diagram_draws_the_topic_into_its_consumer_and_the_bridge_onto_the_bus(synth):
    from inferbus.diagram import mermaid, topology

    def build(stack):
        add_consumer(stack, MSK)
        add_consumer(stack, SELF_MANAGED)
        add_bridge(stack)

    graph = topology(template=synth(build).to_json())
    labels = {data["label"].replace("\n", " ") for _, data in graph.nodes(data=True)}
    for declaration in (MSK, SELF_MANAGED):
        topic = declaration.broker
        (node,) = [n for n, data in graph.nodes(data=True) if data["label"].startswith(f"Kafka topic {topic.topic}")
                   and topic.consumer_group_id in data["label"].replace("\n", " ")]
        (function,) = graph.successors(node)
        assert graph.edges[node, function]["label"] == "batches, in order per partition"
        retries = [d["label"] for _, _, d in graph.out_edges(function, data=True) if d["label"].startswith("on failure")]
        assert retries == [f"on failure, after {declaration.settings.max_receive_count - 1} retries"]
    bridged = [n for n, data in graph.nodes(data=True) if data["kind"] == "producer" and "payments" in data["label"]]
    assert [data["label"] for _, _, data in graph.out_edges(bridged, data=True)] == ["EventBridge Pipe"]
    assert "Kafka topic payments" in mermaid(graph) and any("self-managed Kafka" in label for label in labels)
