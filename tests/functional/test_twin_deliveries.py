"""A client's PutEvents to the twin's endpoint answers before its rule deliveries, as EventBridge does
(inferbus/runtime/deliveries.py): nothing put is lost, in-request checks still answer, failures are told."""

from __future__ import annotations

import json
import threading

import boto3
import pytest
from botocore.config import Config

from inferbus.runtime import moto_patches
from inferbus.runtime.deliveries import DELIVERIES, Deliveries
from inferbus.twin_http import TwinRoutes, twin_server
from tests.redis_server import free_port

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": REGION}
HANDED_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:handed"  # a target moto hands to the runtime's hook


class Hook:
    """The runtime's delivery hook for the rule's Lambda target: records each event; may hold or fail."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()
        self.failing: set[str] = set()  # event ids whose delivery raises

    def __call__(self, rule_arn: str, target: dict, event: dict) -> bool:
        if target["Arn"] != HANDED_ARN:
            return False
        self.entered.set()
        assert self.release.wait(30), "the test never released the hook"
        if event["id"] in self.failing:
            raise RuntimeError("the target is down")
        self.seen.append(event["detail"]["n"])
        return True


@pytest.fixture
def twin():
    """Patched moto behind the twin's HTTP routes on a loopback port, deliveries started; yields
    (hook, a client of that endpoint, an in-process client, the queue URL a rule fills)."""
    from moto import mock_aws

    hook = Hook()
    with mock_aws():
        moto_patches.install(deliver=hook)
        port = free_port()
        server = twin_server(lambda app: TwinRoutes(app, region=REGION, ingest=None, deliveries=DELIVERIES),
                             host="127.0.0.1", port=port)
        server.start()
        DELIVERIES.start()
        try:
            local_events, sqs = boto3.client("events", region_name=REGION), boto3.client("sqs", region_name=REGION)
            url = sqs.create_queue(QueueName="work")["QueueUrl"]
            local_events.put_rule(Name="to-queue", EventPattern=json.dumps({"source": ["my.app"]}))
            local_events.put_targets(Rule="to-queue", Targets=[{"Id": "q", "Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:work"}])
            local_events.put_rule(Name="to-function", EventPattern=json.dumps({"source": ["my.app"]}))
            local_events.put_targets(Rule="to-function", Targets=[{"Id": "f", "Arn": HANDED_ARN}])
            remote = boto3.session.Session(**CREDENTIALS).client(
                "events", endpoint_url=f"http://127.0.0.1:{port}",
                config=Config(read_timeout=10, retries={"max_attempts": 1}))  # inline deliveries would time out, not hang
            yield hook, remote, local_events, sqs, url
        finally:
            hook.release.set()
            DELIVERIES.stop()
            DELIVERIES.on_failure = None
            server.stop()
            moto_patches.uninstall()


def entries(first: int, count: int = 10) -> list[dict]:
    return [{"Source": "my.app", "DetailType": "Work", "Detail": json.dumps({"n": n})} for n in range(first, first + count)]


def received(sqs, url: str, expected: int) -> list[int]:
    """Every message's ``n``, deleting as it reads; waits (long polls) for ``expected`` of them."""
    found: list[int] = []
    for _ in range(30):
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        for message in answer.get("Messages", []):
            found.append(json.loads(message["Body"])["detail"]["n"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        if len(found) >= expected:
            break
    return found


def test_a_clients_put_events_answers_before_its_deliveries_and_every_event_follows_in_order(twin):
    hook, remote, _, sqs, url = twin
    hook.release.clear()  # the deliveries thread will wait in the hook
    answers = [remote.put_events(Entries=entries(first)) for first in (0, 10, 20)]
    # All three answered while the first delivery was still held in the hook: they did not wait for it.
    assert hook.entered.wait(10) and not hook.seen
    assert [a["FailedEntryCount"] for a in answers] == [0, 0, 0]
    assert all(len(a["Entries"]) == 10 and all("EventId" in e for e in a["Entries"]) for a in answers)
    assert DELIVERIES.pending > 0
    hook.release.set()
    assert sorted(received(sqs, url, 30)) == list(range(30))
    assert hook.seen == list(range(30))  # one thread, in the order the requests came
    assert DELIVERIES.pending == 0


def test_the_checks_that_decide_the_answer_still_run_in_the_request(twin):
    _, remote, _, sqs, url = twin
    answer = remote.put_events(Entries=[
        entries(0, 1)[0],
        {"Source": "my.app", "DetailType": "Work"},  # no Detail
        {"Source": "my.app", "DetailType": "Work", "Detail": "{not json"},
        entries(1, 1)[0],
    ])
    assert answer["FailedEntryCount"] == 2
    assert [e.get("ErrorCode") for e in answer["Entries"]] == [None, "InvalidArgument", "MalformedDetail", None]
    with pytest.raises(remote.exceptions.ResourceNotFoundException):
        remote.put_events(Entries=[{**entries(2, 1)[0], "EventBusName": "no-such-bus"}])
    assert sorted(received(sqs, url, 2)) == [0, 1]  # the two accepted, and nothing of the refused


def test_a_failed_delivery_is_told_and_the_other_rules_still_deliver(twin):
    hook, remote, _, sqs, url = twin
    told = []
    DELIVERIES.on_failure = told.append
    hook.release.clear()
    answer = remote.put_events(Entries=entries(0, 3))
    hook.failing = {answer["Entries"][1]["EventId"]}
    hook.release.set()
    assert sorted(received(sqs, url, 3)) == [0, 1, 2]  # the queue's rule got every event
    DELIVERIES.stop()  # waits for the thread, so every failure has been told
    assert hook.seen == [0, 2]
    assert [(f.event_id, f.rule_arn.rsplit("/", 1)[-1], f.reason) for f in told] == [
        (answer["Entries"][1]["EventId"], "to-function", "RuntimeError: the target is down")]
    assert DELIVERIES.failures[-1] == told[0]


def test_stop_delivers_every_event_taken_before_it_returns(twin):
    hook, remote, _, sqs, url = twin
    hook.release.clear()
    remote.put_events(Entries=entries(0))
    assert hook.entered.wait(10)
    stopped = threading.Event()
    stopper = threading.Thread(target=lambda: (DELIVERIES.stop(), stopped.set()))
    stopper.start()
    assert not stopped.wait(0.5)  # still delivering: stop waits for what was taken
    hook.release.set()
    stopper.join(30)
    assert stopped.is_set() and DELIVERIES.pending == 0
    assert hook.seen == list(range(10))
    assert sorted(received(sqs, url, 10)) == list(range(10))


def test_a_put_made_in_process_still_delivers_before_it_returns(twin):
    """A function's PutEvents of its results, the demo's, a test's: not a client over HTTP."""
    hook, _, local_events, sqs, url = twin
    local_events.put_events(Entries=entries(0, 2))
    assert hook.seen == [0, 1]  # delivered inside the call
    assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])[
        "Attributes"]["ApproximateNumberOfMessages"] == "2"


def test_a_put_past_the_limit_waits_for_room():
    deliveries = Deliveries(limit=10)
    deliveries.start()
    held = threading.Event()
    most = []

    def deliver():
        most.append(deliveries.pending)
        held.wait(30)
        return []

    try:
        deliveries.defer(deliver, 10)
        second = threading.Thread(target=deliveries.defer, args=(deliver, 5))
        second.start()
        second.join(0.5)
        assert second.is_alive()  # 10 taken and undelivered: no room for 5 more
        held.set()
        second.join(30)
        assert not second.is_alive()
    finally:
        held.set()
        deliveries.stop()
    assert max(most) <= 10 and deliveries.pending == 0


def test_a_limit_below_one_is_refused():
    with pytest.raises(ValueError, match="limit must be at least 1"):
        Deliveries(limit=0)


def test_a_put_that_finds_the_thread_stopped_delivers_in_the_request():
    """stop() and a PutEvents may cross: what the request took is delivered, not queued behind the thread's end."""
    deliveries = Deliveries(limit=10)
    deliveries.start()
    deliveries.stop()
    done = []
    deliveries.defer(lambda: done.append("delivered") or [], 3)
    assert done == ["delivered"] and deliveries.pending == 0
