"""A ``fifo`` consumer, derived from its declaration: the rule fills an arrivals FIFO queue, a pipe
moves each event into the consumer's FIFO queue in the message group its key names, and Lambda
reads that queue; every queue and its DLQ are FIFO, and the whole passes the cdk-nag gate."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.constructs.ordered_consumer_stack import ORDERED, add_consumer

ROOT = Path(__file__).resolve().parents[2]


def queue_named(template, logical_prefix: str) -> dict:
    (queue,) = [q["Properties"] for lid, q in template.find_resources("AWS::SQS::Queue").items() if lid.startswith(logical_prefix)]
    return queue


def test_a_fifo_consumer_reads_a_fifo_queue_with_a_fifo_dlq_in_high_throughput_mode(synth):
    template = synth(add_consumer)
    stem = ORDERED.construct_id
    work, dead = queue_named(template, f"{stem}QueuesQueue"), queue_named(template, f"{stem}QueuesDeadLetterQueue")
    assert work["FifoQueue"] and dead["FifoQueue"] and work["SqsManagedSseEnabled"]
    assert (work["ContentBasedDeduplication"], work["DeduplicationScope"], work["FifoThroughputLimit"]) == (
        True, "messageGroup", "perMessageGroupId")
    assert work["RedrivePolicy"]["maxReceiveCount"] == ORDERED.settings.max_receive_count
    mapping = template.find_resources("AWS::Lambda::EventSourceMapping")
    (props,) = [m["Properties"] for m in mapping.values()]
    assert "MaximumBatchingWindowInSeconds" not in props  # Lambda refuses a batching window on a FIFO queue
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"] and props["BatchSize"] == ORDERED.settings.batch_size


def test_the_rule_fills_one_arrivals_group_and_the_pipe_groups_by_the_declared_key(synth):
    template = synth(add_consumer)
    stem = ORDERED.construct_id
    arrivals = queue_named(template, f"{stem}ArrivalsQueue")
    assert arrivals["FifoQueue"] and arrivals["ContentBasedDeduplication"]
    (rule,) = template.find_resources("AWS::Events::Rule").values()
    (target,) = rule["Properties"]["Targets"]
    assert target["SqsParameters"] == {"MessageGroupId": stem}
    assert target["Arn"]["Fn::GetAtt"][0].startswith(f"{stem}ArrivalsQueue")
    (pipe,) = template.find_resources("AWS::Pipes::Pipe").values()
    parameters = pipe["Properties"]["TargetParameters"]
    key = ORDERED.group_by.removeprefix("$")
    assert parameters["SqsQueueParameters"] == {"MessageGroupId": f"$.body{key}", "MessageDeduplicationId": "$.body.detail.id"}
    assert parameters["InputTemplate"] == "<$.body>"
    assert pipe["Properties"]["Source"]["Fn::GetAtt"][0].startswith(f"{stem}ArrivalsQueue")
    assert pipe["Properties"]["Target"]["Fn::GetAtt"][0].startswith(f"{stem}QueuesQueue")


def test_the_pipes_role_only_consumes_the_arrivals_and_sends_to_the_consumers_queue(synth):
    template = synth(add_consumer)
    policies = [p["Properties"] for lid, p in template.find_resources("AWS::IAM::Policy").items() if "PipeRole" in lid]
    (statements,) = [p["PolicyDocument"]["Statement"] for p in policies]
    actions = {s["Resource"]["Fn::GetAtt"][0]: set(s["Action"]) for s in statements}
    (arrivals,) = [lid for lid in actions if lid.startswith(f"{ORDERED.construct_id}ArrivalsQueue")]
    (work,) = [lid for lid in actions if lid.startswith(f"{ORDERED.construct_id}QueuesQueue")]
    assert set(actions) == {arrivals, work}  # nothing else: not the DLQs, not the function
    assert {"sqs:ReceiveMessage", "sqs:DeleteMessage"} <= actions[arrivals]
    assert "sqs:SendMessage" in actions[work] and not any("Delete" in a or "Receive" in a for a in actions[work])


def test_an_sqs_consumer_keeps_its_standard_queue_and_no_pipe(synth):
    template = synth(lambda stack: add_consumer(stack, ORDERED.__class__(
        name="plain-scorer", handler=ORDERED.handler, accepts=ORDERED.accepts, emits=ORDERED.emits)))
    assert not any("FifoQueue" in q["Properties"] for q in template.find_resources("AWS::SQS::Queue").values())
    assert template.find_resources("AWS::Pipes::Pipe") == {}


def test_a_fifo_consumer_passes_the_cdk_nag_gate(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'functions'}"}
    result = subprocess.run([sys.executable, "-m", "tests.constructs.ordered_consumer_stack", str(tmp_path)],
                            capture_output=True, text=True, timeout=300, cwd=ROOT, env=env, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "Ordered.template.json").exists()
