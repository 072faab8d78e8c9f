"""A pipeline that runs without end (``inferbus serve``) keeps a window of what happened: each function's
last invocations and their logs, each state machine's running executions and its last finished ones."""

from __future__ import annotations

import json
import time

import pytest

from inferbus.runtime import embedded, moto_patches
from tests.runtime_fixtures import runtime
from tests.runtime_fixtures import templates as t

ECHO_MACHINE = {"StartAt": "Echo", "States": {"Echo": t.task("Echo")}}
WAITING = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 30, "End": True}}}


def template() -> dict:
    return t.template(Echo=t.function("echo", tag="step"),
                      Machine=t.state_machine(ECHO_MACHINE, t.function_arn("Echo"), machine_type="STANDARD"),
                      Waiting=t.state_machine(WAITING, {}, machine_type="STANDARD"),
                      Other=t.state_machine({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}, {},
                                            machine_type="STANDARD"))


def run(pipeline, machine: str, count: int, prefix: str) -> None:
    """One execution after the other, each to its end (not drain: an execution parked in a Wait state never settles)."""
    for n in range(count):
        arn = pipeline.stepfunctions.start_execution(stateMachineArn=pipeline.state_machines[machine].arn,
                                                     name=f"{prefix}-{n}", input=json.dumps({"n": n}))["executionArn"]
        deadline = time.monotonic() + 30
        while pipeline.stepfunctions.describe_execution(executionArn=arn)["status"] == "RUNNING":
            assert time.monotonic() < deadline, f"{prefix}-{n} did not end"
            time.sleep(0.01)


def listed(pipeline, machine: str) -> list[dict]:
    pages = pipeline.stepfunctions.get_paginator("list_executions").paginate(
        stateMachineArn=pipeline.state_machines[machine].arn)
    return [item for page in pages for item in page["executions"]]


@pytest.mark.parametrize("retain", [3, 12])
def test_a_function_keeps_its_last_invocations_and_only_their_logs(retain):
    with runtime(template(), tap=False, retain=retain) as pipeline:
        run(pipeline, "Machine", retain + 5, "echo")
        echo = pipeline.functions["Echo"]
        inputs = [invocation for invocation in echo.invocations]
        assert len(inputs) == retain
        # the window is the LAST ones: the logs left are of the last executions' tasks, one line and one metric each
        assert len(echo.logs) == retain and echo.metrics == {"Echoes": [1] * retain}


def test_without_a_window_everything_is_kept():
    with runtime(template(), tap=False) as pipeline:
        run(pipeline, "Machine", 8, "echo")
        assert len(pipeline.functions["Echo"].invocations) == 8 and len(pipeline.executions("Machine")) == 8


@pytest.fixture
def trim_at_every_change(monkeypatch):
    monkeypatch.setattr(embedded, "TRIM_EVERY_S", 0.0)  # a long-running pipeline trims once a second


def test_finished_executions_beyond_the_window_are_forgotten_and_running_ones_kept(trim_at_every_change):
    retain = 4
    with runtime(template(), tap=False, retain=retain) as pipeline:
        pipeline.start()  # as serve runs: the dispatcher tells each end, and only a told end may be forgotten
        pipeline.stepfunctions.start_execution(stateMachineArn=pipeline.state_machines["Waiting"].arn, name="parked")
        run(pipeline, "Machine", 3 * retain, "echo")
        while pipeline.status_changes.waiting:
            time.sleep(0.01)
        run(pipeline, "Other", 1, "other")  # its end trims the windows again, every end before it told
        names = [item["name"] for item in listed(pipeline, "Machine")]
        assert len(names) <= retain
        assert f"echo-{3 * retain - 1}" in names and "echo-0" not in names  # the newest kept, the oldest gone
        assert [item["status"] for item in listed(pipeline, "Waiting")] == ["RUNNING"]  # never a running one
        from moto.stepfunctions.parser.utils import TMP_THREADS

        # moto's record of every thread it started (2 or more per execution here): only those running at the last trim stay
        assert len(TMP_THREADS) <= 8
        kept = pipeline.stepfunctions.describe_execution(executionArn=listed(pipeline, "Machine")[0]["executionArn"])
        assert kept["status"] == "SUCCEEDED"  # what is kept still reads as before
        pipeline.stepfunctions.stop_execution(executionArn=listed(pipeline, "Waiting")[0]["executionArn"])


def test_a_window_must_hold_something():
    with pytest.raises(ValueError, match="retain must be at least 1"):
        runtime(template(), retain=0)


def test_the_archive_and_the_deleted_receipt_handles_keep_their_last_events(trim_at_every_change):
    retain = 1  # keeps 100 of each
    work = t.template(WorkQueue=t.queue(), WorkRule=t.rule("Work", [t.queue_target("WorkQueue")]))
    with runtime(work, tap=False, retain=retain) as pipeline:
        bus_arn = pipeline.events.describe_event_bus(Name=pipeline.bus_name)["Arn"]
        pipeline.events.create_archive(ArchiveName="everything", EventSourceArn=bus_arn)
        url = pipeline.deployment.queues["WorkQueue"].url
        for start in range(0, 150, 10):
            pipeline.put_events([{"EventBusName": pipeline.bus_name, "Source": "s", "DetailType": "Work",
                                  "Detail": json.dumps({"n": n})} for n in range(start, start + 10)])
            for message in pipeline.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]:
                pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        pipeline.put_events([{"EventBusName": pipeline.bus_name, "Source": "s", "DetailType": "Work", "Detail": "{}"}])
        archived = pipeline.events.describe_archive(ArchiveName="everything")["EventCount"]
        assert 0 < archived <= 100 * retain + 10  # trimmed when the last messages arrived, its own 10 on top at most
        queue = moto_patches._queue(pipeline.deployment.queues["WorkQueue"].arn)
        assert len(queue.deleted_messages) <= 100 * retain
        (last,) = pipeline.sqs.receive_message(QueueUrl=url)["Messages"]
        pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=last["ReceiptHandle"])
        pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=last["ReceiptHandle"])  # a second delete still succeeds


def test_executions_of_one_revision_share_one_snapshot_of_their_machine():
    """moto deep-copied the state machine at every StartExecution: a copy kept with each execution."""
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    with runtime(template(), tap=False) as pipeline:
        arn = pipeline.state_machines["Machine"].arn
        run(pipeline, "Machine", 5, "echo")
        machine = next(m for regions in stepfunctions_parser_backends.values() for backend in regions.values()
                       for m in backend.state_machines if m.arn == arn)
        snapshots = {id(e.state_machine) for e in machine.executions}
        assert len(machine.executions) == 5 and len(snapshots) == 1
        assert machine.executions[0].state_machine is not machine  # a snapshot, not the live machine
        before = json.loads(machine.definition)
        changed = {**before, "Comment": "a new revision"}
        pipeline.stepfunctions.update_state_machine(stateMachineArn=arn, definition=json.dumps(changed))
        run(pipeline, "Machine", 2, "after")
        newer = machine.executions[-1].state_machine
        assert id(newer) not in snapshots and newer is machine.executions[-2].state_machine  # one per revision
        assert json.loads(newer.definition) == changed
        assert json.loads(machine.executions[0].state_machine.definition) == before  # the old snapshot unchanged


def test_a_running_pipeline_deletes_items_whose_time_to_live_passed(monkeypatch):
    """Claims carry a TTL (``expiration``); moto never applied it, so every claim stayed for the process's life."""
    monkeypatch.setattr(embedded, "TTL_SWEEP_S", 0.05)
    claims = {"Type": "AWS::DynamoDB::Table", "Properties": {
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
        "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True}}}
    with runtime(t.template(Claims=claims), tap=False) as pipeline:
        dynamodb = pipeline.session.client("dynamodb")
        table = dynamodb.list_tables()["TableNames"][0]
        now = int(time.time())
        for key, expiration in (("expired", now - 10), ("live", now + 3600), ("expiring", now + 1)):
            dynamodb.put_item(TableName=table, Item={"id": {"S": key}, "expiration": {"N": str(expiration)}})
        pipeline.start()
        deadline = time.monotonic() + 30
        while {i["id"]["S"] for i in dynamodb.scan(TableName=table)["Items"]} != {"live"}:
            assert time.monotonic() < deadline, dynamodb.scan(TableName=table)["Items"]
            time.sleep(0.05)


# -- retention_s: how long the twin remembers what only recognises an event that comes back ----------------------


def claims_of(pipeline, event) -> list[dict]:
    from inferbus_lambda.claims.base import event_key

    from inferbus.model.names import IDEMPOTENCY_TABLE_OUTPUT

    items = pipeline.session.client("dynamodb").scan(TableName=pipeline.outputs[IDEMPOTENCY_TABLE_OUTPUT])["Items"]
    return [item for item in items if item["id"]["S"].endswith(event_key(event))]


def classified_ids(pipeline) -> list[str]:
    return [e["detail"]["data"]["input_id"] for e in pipeline.tapped_events() if e["detail-type"] == "ImageClassified"]


def test_a_duplicate_within_the_window_is_dropped_and_the_claim_is_freed_after_it(template):
    """serve ran with the template's claim lifetime (45 days): under a steady load its claims grew without end."""
    from inferbus_lambda.contracts import ImageSubmitted, new_event, to_put_events_entry

    from inferbus.local import LocalPipeline

    window_s = 3
    with LocalPipeline(template, retention_s=window_s) as pipeline:
        consumer = pipeline.consumer("image-classifier").function
        event = new_event(ImageSubmitted(pixels=[3] * 64), source="retention.test")
        entry = to_put_events_entry(event, pipeline.bus_name)
        assert pipeline.put_events([entry]) == []
        pipeline.drain()
        assert classified_ids(pipeline) == [event.id]
        (claim,) = claims_of(pipeline, event)
        assert int(claim["expiration"]["N"]) <= time.time() + window_s + 1  # the window's, not the template's lifetime

        assert pipeline.put_events([entry]) == []  # the same event again, within the window: dropped as before
        pipeline.drain()
        assert classified_ids(pipeline) == [] and sum(consumer.metrics["DuplicatesSkipped"]) == 1

        moto_patches.expire_items(time.time() + window_s + 1)  # the sweep a started pipeline runs every few seconds
        assert claims_of(pipeline, event) == []
        assert pipeline.put_events([entry]) == []  # after the window: taken as new, as AWS after the claim lifetime
        pipeline.drain()
        assert classified_ids(pipeline) == [event.id]


def test_every_claims_function_runs_with_the_shorter_of_its_lifetime_and_the_window(template):
    from inferbus.local import LocalPipeline

    lifetimes = {}
    with LocalPipeline(template) as pipeline:
        for logical_id, function in pipeline.functions.items():
            if embedded.CLAIM_LIFETIME_VARIABLE in function.spec.environment:
                lifetimes[logical_id] = int(function.environment[embedded.CLAIM_LIFETIME_VARIABLE])
    assert lifetimes, "the template has no function that claims event ids"
    shortest = min(lifetimes.values())
    for window_s in (shortest - 1, shortest + 100):  # one shorter than every lifetime, one longer than some
        with LocalPipeline(template, retention_s=window_s) as pipeline:
            running = {logical_id: int(pipeline.functions[logical_id].environment[embedded.CLAIM_LIFETIME_VARIABLE])
                       for logical_id in lifetimes}
        assert running == {logical_id: min(lifetime, window_s) for logical_id, lifetime in lifetimes.items()}


def test_the_archive_keeps_only_the_events_of_the_window(trim_at_every_change):
    """An archived event older than the window could be replayed after its claim expired: it is forgotten with it."""
    work = t.template(WorkQueue=t.queue(), WorkRule=t.rule("Work", [t.queue_target("WorkQueue")]))
    with runtime(work, tap=False, retention_s=60) as pipeline:
        bus_arn = pipeline.events.describe_event_bus(Name=pipeline.bus_name)["Arn"]
        pipeline.events.create_archive(ArchiveName="everything", EventSourceArn=bus_arn)
        now = time.time()
        ages_s = [600, 120, 61, 30, 0]  # put in this order: the archive is in arrival order
        pipeline.put_events([{"EventBusName": pipeline.bus_name, "Source": "s", "DetailType": "Work",
                              "Time": now - age, "Detail": json.dumps({"age": age})} for age in ages_s])
        pipeline.put_events([{"EventBusName": pipeline.bus_name, "Source": "s", "DetailType": "Work", "Detail": "{}"}])
        from moto.events.models import events_backends

        archive = next(a for regions in events_backends.values() for backend in regions.values()
                       for a in backend.archives.values())
        kept = [json.loads(e["detail"]) if isinstance(e["detail"], str) else e["detail"] for e in archive.events]
        assert [k.get("age") for k in kept] == [30, 0, None]  # older than 60 s: forgotten; the rest kept, in order
        url = pipeline.deployment.queues["WorkQueue"].url
        delivered = pipeline.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        assert len(delivered) == len(ages_s) + 1  # the window forgets archived copies, never a delivery


def test_a_retention_window_must_hold_something():
    with pytest.raises(ValueError, match="retention_s must be at least 1 s"):
        runtime(template(), retention_s=0)


def test_handles_and_started_names_are_forgotten_after_the_window_and_a_late_duplicate_still_starts_nothing(
        trim_at_every_change):
    """serve's memory grew for as long as it ran: each queue's handles of deleted messages (to 10,000 a queue)
    and each state machine target's names of executions started (without end) outlived the retention window."""
    pass_asl = {"StartAt": "Keep", "States": {"Keep": {"Type": "Pass", "End": True}}}
    work = t.template(WorkQueue=t.queue(), WorkRule=t.rule("Work", [t.queue_target("WorkQueue")]),
                      Machine=t.state_machine(pass_asl, {}, machine_type="STANDARD"),
                      MachineRule=t.rule("Start", [t.state_machine_target("Machine")]))
    window_s = 1
    with runtime(work, tap=True, retain=100, retention_s=window_s) as pipeline:
        url = pipeline.deployment.queues["WorkQueue"].url
        pipeline.put_events([{"EventBusName": pipeline.bus_name, "Source": "s", "DetailType": "Work", "Detail": "{}"},
                             {"EventBusName": pipeline.bus_name, "Source": "s", "DetailType": "Start", "Detail": "{}"}])
        (message,) = pipeline.sqs.receive_message(QueueUrl=url)["Messages"]
        pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])  # within it: succeeds
        pipeline.drain(timeout_s=10)
        started = next(e for e in pipeline.tapped_events() if e["detail-type"] == "Start")
        (bridge,) = pipeline.bridges
        queue = moto_patches._queue(pipeline.deployment.queues["WorkQueue"].arn)
        assert message["ReceiptHandle"] in queue.deleted_messages and len(bridge._started) == 1

        time.sleep(window_s + 0.1)
        pipeline.put_events([{"EventBusName": pipeline.bus_name, "Source": "s", "DetailType": "Work", "Detail": "{}"}])
        assert not queue.deleted_messages and not bridge._started  # the trim at that change forgot both
        with pytest.raises(pipeline.sqs.exceptions.ReceiptHandleIsInvalid):
            pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])  # as AWS, an old handle

        bridge.offer(started)  # the same event after the window: moto still has its execution, so nothing new starts
        pipeline.drain(timeout_s=10)
        assert len(pipeline.executions("Machine")) == 1 and (bridge.counts.started, bridge.counts.duplicates) == (1, 1)


def test_an_unread_tap_keeps_only_the_last_events_of_its_window(trim_at_every_change):
    """The console lists the last 50 events; an unread tap kept 10,000 (about 60 MB in a soak)."""
    work = t.template(WorkQueue=t.queue(), WorkRule=t.rule("Work", [t.queue_target("WorkQueue")]))
    retain = 5
    with runtime(work, tap=True, retain=retain) as pipeline:
        for start in range(0, 30, 10):
            pipeline.put_events([{"EventBusName": pipeline.bus_name, "Source": "s", "DetailType": "Work",
                                  "Detail": json.dumps({"n": n})} for n in range(start, start + 10)])
        kept = [event["detail"]["n"] for event in pipeline.tapped_events()]
        assert kept[-1] == 29 and len(kept) <= retain + 10  # trimmed at the last put: its own 10 on top at most
        assert kept == sorted(kept) and kept[:1] >= [29 - retain - 10 + 1]
