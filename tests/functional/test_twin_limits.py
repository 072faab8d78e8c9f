"""The local twin refuses what AWS refuses (inferbus/runtime/aws_limits.py), with AWS's error shapes.

PutEvents limits on a hand-written template; unreadable JSON-protocol bodies on moto's server (what
``inferbus serve`` runs). The bus policy is test_twin_bus_policy.py.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from datetime import UTC, datetime

import pytest
from botocore.config import Config
from inferbus_lambda.publishing import MAX_ENTRIES_PER_REQUEST, MAX_REQUEST_BYTES

from inferbus.runtime import moto_patches
from tests.runtime_fixtures import runtime
from tests.runtime_fixtures import templates as t

WATCHED = t.template(WorkQueue=t.queue(), WorkRule=t.rule("Work", [t.queue_target("WorkQueue")]))
TIME = datetime(2026, 12, 5, tzinfo=UTC)
MAX_DETAIL_DEPTH = 1000  # the API reference: "PutEvents will only process nested JSON up to 1000 levels deep"


def documented_size(entry: dict) -> int:
    """An entry's size as "Calculating PutEvents event entry size" documents it (written out again, on purpose)."""
    size = 14 if "Time" in entry else 0
    size += sum(len(entry[key].encode("utf-8")) for key in ("Source", "DetailType", "Detail") if key in entry)
    return size + sum(len(resource.encode("utf-8")) for resource in entry.get("Resources", []))


def work(bus: str, detail: str = "{}", **extra) -> dict:
    return {"EventBusName": bus, "Source": "my.app", "DetailType": "Work", "Detail": detail, **extra}


def sized(bus: str, size: int) -> dict:
    """An entry of exactly ``size`` bytes as AWS counts them: a Time, Resources and multibyte text in the Detail."""
    entry = work(bus, Time=TIME, Resources=["arn:aws:s3:::bucket/ключ"])
    padding = size - documented_size(entry | {"Detail": '{"t": ""}'})
    text = "é" * (padding // 2) + "x" * (padding % 2)  # two UTF-8 bytes each: characters are not bytes
    return entry | {"Detail": json.dumps({"t": text}, ensure_ascii=False)}


def delivered(pipeline) -> list[dict]:
    url = pipeline.deployment.queues["WorkQueue"].url
    found = []
    while messages := pipeline.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            found.append(json.loads(message["Body"])["detail"])
            pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return found


# -- PutEvents limits ------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [0, MAX_ENTRIES_PER_REQUEST + 1, 3 * MAX_ENTRIES_PER_REQUEST])
def test_a_request_without_entries_or_with_too_many_fails_as_a_whole(count):
    with runtime(WATCHED, tap=False) as pipeline:
        events = pipeline.session.client("events", config=Config(parameter_validation=False))
        with pytest.raises(events.exceptions.ClientError, match="ValidationException.*Member must have length"):
            events.put_events(Entries=[work(pipeline.bus_name)] * count)
        assert delivered(pipeline) == []


def test_the_request_size_limit_is_counted_as_aws_documents_it():
    with runtime(WATCHED, tap=False) as pipeline:
        half = MAX_REQUEST_BYTES // 2
        exactly = [sized(pipeline.bus_name, half), sized(pipeline.bus_name, MAX_REQUEST_BYTES - half)]
        assert sum(documented_size(e) for e in exactly) == MAX_REQUEST_BYTES
        answer = pipeline.events.put_events(Entries=exactly)
        assert answer["FailedEntryCount"] == 0 and len(delivered(pipeline)) == 2
        over = [exactly[0], sized(pipeline.bus_name, MAX_REQUEST_BYTES - half + 1)]
        with pytest.raises(pipeline.events.exceptions.ClientError,
                           match=r"ValidationException.*Total size of the entries in the request is over the limit"):
            pipeline.events.put_events(Entries=over)
        one_too_large = [work(pipeline.bus_name), sized(pipeline.bus_name, MAX_REQUEST_BYTES + 1)]
        with pytest.raises(pipeline.events.exceptions.ClientError, match="Total size"):
            pipeline.events.put_events(Entries=one_too_large)
        assert delivered(pipeline) == []  # a refused request delivers none of its entries


def nested(depth: int) -> str:
    return '{"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


@pytest.mark.parametrize(("detail", "refused"), [
    (nested(MAX_DETAIL_DEPTH + 1), True), (nested(3000), True), (nested(400), False),
    ('{"brackets in a string": "' + "[" * 3000 + '"}', False),
    (json.dumps({"n": 2**63}), True), (json.dumps({"n": 2**63 - 1}), False),
    (json.dumps({"n": -(2**63)}), False), (json.dumps({"n": -(2**63) - 1}), True),
    (json.dumps({"n": [1, {"m": 10**30}]}), True), (json.dumps({"digits": "9" * 40}), False),
    ("[]", True), ("42", True), ("null", True),
    ('{"n": NaN}', True), ('{"n": [1, -Infinity]}', True), ('{"n": Infinity}', True), ('{"text": "NaN"}', False),
])
def test_a_detail_aws_cannot_take_fails_its_entry_and_the_others_go_on(detail, refused):
    with runtime(WATCHED, tap=False) as pipeline:
        answer = pipeline.events.put_events(Entries=[work(pipeline.bus_name, detail), work(pipeline.bus_name, '{"ok": 1}')])
        first, second = answer["Entries"]
        assert (first.get("ErrorCode") == "MalformedDetail") is refused and "EventId" in second
        assert answer["FailedEntryCount"] == int(refused)
        assert len(delivered(pipeline)) == 2 - int(refused)


# -- unreadable JSON-protocol requests, on moto's server (what ``inferbus serve`` runs) ---------------
# Last in this module: its server holds moto patched for the module's rest (the runtime above patches it per test).


@pytest.fixture(scope="module")
def server():
    from moto.server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    moto_patches.install()
    motoserver = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    motoserver.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        motoserver.stop()
        moto_patches.uninstall()


TARGETS = {"events": ("AWSEvents.PutEvents", "application/x-amz-json-1.1"),  # signing name: (target, content type)
           "sqs": ("AmazonSQS.ListQueues", "application/x-amz-json-1.0"),
           "states": ("AWSStepFunctions.ListStateMachines", "application/x-amz-json-1.0"),
           "dynamodb": ("DynamoDB_20120810.ListTables", "application/x-amz-json-1.0")}


def post(endpoint: str, service: str, body: bytes) -> tuple[int, str, bytes]:
    target, content_type = TARGETS[service]
    request = urllib.request.Request(endpoint, data=body, method="POST", headers={
        "X-Amz-Target": target, "Content-Type": content_type,
        "Authorization": f"AWS4-HMAC-SHA256 Credential=testing/20261205/us-east-1/{service}/aws4_request, "
                         "SignedHeaders=host;x-amz-target, Signature=0"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


UNREADABLE = {
    "nested 5,000 levels": b'{"Entries": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    "nested 1,001 levels": b'{"x": ' + b"[" * 1000 + b"]" * 1000 + b"}",
    "not JSON": b'{"Entries": [oops',
    "not UTF-8": b'{"Entries": ["\xff\xfe"]}',
    "not an object": b"[1, 2]",
}


@pytest.mark.parametrize("service", sorted(TARGETS))
@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_an_unreadable_json_request_is_a_400_with_aws_error_body_never_an_html_500(server, service, case):
    status, content_type, body = post(server, service, UNREADABLE[case])
    assert status == 400, body[:200]
    assert "json" in content_type and not body.lstrip().startswith(b"<")
    error = json.loads(body)
    assert error["__type"] == "SerializationException" and error["message"]


@pytest.mark.parametrize("entries", [5, "entries", ["an entry"], [{"Source": 5, "DetailType": "b", "Detail": "{}"}],
                                     [{"Source": "a", "DetailType": "b", "Detail": {"an": "object"}}],
                                     [{"Source": "a", "DetailType": "b", "Detail": "{}", "Resources": "arn"}]])
def test_put_events_with_values_of_the_wrong_json_type_is_a_400(server, entries):
    status, _, body = post(server, "events", json.dumps({"Entries": entries}).encode())
    assert status == 400, body[:200]
    assert json.loads(body)["__type"] == "SerializationException"


def test_a_deep_detail_inside_a_readable_request_fails_its_entry_not_the_server(server):
    entries = [{"Source": "a", "DetailType": "b", "Detail": nested(3000)}, {"Source": "a", "DetailType": "b", "Detail": "{}"}]
    status, _, body = post(server, "events", json.dumps({"Entries": entries}).encode())
    assert status == 200, body[:200]
    assert [entry.get("ErrorCode") for entry in json.loads(body)["Entries"]] == ["MalformedDetail", None]
