"""``inferbus serve`` with real clients in other processes: boto3 (this test process, and
``inferbus send`` in a subprocess) against the endpoint a subprocess serves."""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import boto3
import pytest
from inferbus_lambda.contracts import to_put_events_entry

from inferbus.demo.inputs import input_type, sample_event
from inferbus.model.settings import InferbusSettings
from inferbus.model.names import INVALID_EVENTS_OUTPUT, QUEUE_URL, UNROUTED_CHECK_ID, UNROUTED_CHECK_NAME
from tests.declared import DEMO, PIPELINE
from tests.functional.test_twin_bus_policy import reserved_sources
from tests.redis_server import free_port

pytestmark = pytest.mark.slow
CLIENT_ENVIRONMENT = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
CONSUMER = next(c for c in PIPELINE.consumers if c.name in DEMO)
PIPELINE_STACK = InferbusSettings().staged(InferbusSettings().stack_name)


@pytest.fixture(scope="module")
def served(template, tmp_path_factory):
    """``inferbus serve --json`` in a subprocess; yields its endpoint, the process, and its output lines
    after the first as they come (a queue: a test waits for a line with a deadline, never forever)."""
    path = tmp_path_factory.mktemp("serve") / "template.json"
    path.write_text(json.dumps(template))
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "inferbus.cli", "serve", "--port", str(port), "--json",
                                "--template", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    ready = json.loads(process.stdout.readline())
    assert ready["kind"] == "ready", ready
    output: queue.Queue[dict] = queue.Queue()
    reader = threading.Thread(target=lambda: [output.put(json.loads(line)) for line in process.stdout if line.strip()],
                              daemon=True)
    reader.start()
    add_foreign_rule(ready)  # before any event: the unrouted-events check reads the bus's rules once per period
    yield ready, process, output
    process.terminate()  # SIGTERM: a clean stop, as Ctrl-C
    err = process.stderr.read()
    process.wait(timeout=30)
    reader.join(timeout=30)
    assert process.returncode == 0, err
    assert "Warning" not in err, err  # nothing but its own lines: a library's warning is noise to its user
    assert list(output.queue)[-1]["kind"] == "stopped"


FOREIGN = {"source": ["shipping.app"], "detail-type": ["ShipmentDelayed"]}  # a rule of another application's


def add_foreign_rule(ready: dict) -> None:
    """A rule outside the stack, on the same bus, sending another application's events to its own queue."""
    events, sqs = client("events", ready["endpoint"]), client("sqs", ready["endpoint"])
    sqs.create_queue(QueueName="shipping-delays")
    events.put_rule(Name="shipping-delays", EventBusName=ready["bus"], EventPattern=json.dumps(FOREIGN))
    events.put_targets(Rule="shipping-delays", EventBusName=ready["bus"],
                       Targets=[{"Id": "delays", "Arn": "arn:aws:sqs:us-east-1:123456789012:shipping-delays"}])


def client(service: str, endpoint: str):
    return boto3.session.Session(**{k.lower(): v for k, v in CLIENT_ENVIRONMENT.items() if k != "AWS_DEFAULT_REGION"},
                                 region_name="us-east-1").client(service, endpoint_url=endpoint)


def test_an_event_put_from_another_process_has_its_result_on_the_bus(served):
    ready, _, _ = served
    endpoint, bus = ready["endpoint"], ready["bus"]
    events, sqs = client("events", endpoint), client("sqs", endpoint)
    watch_url = sqs.create_queue(QueueName="my-watch")["QueueUrl"]
    events.put_rule(Name="my-watch", EventBusName=bus, EventPattern=json.dumps({"detail-type": [CONSUMER.result_type]}))
    events.put_targets(Rule="my-watch", EventBusName=bus,
                       Targets=[{"Id": "watch", "Arn": "arn:aws:sqs:us-east-1:123456789012:my-watch"}])
    event, _ = sample_event(CONSUMER, 0, source="serve.test")
    sent = subprocess.run([sys.executable, "-m", "inferbus.cli", "send", "--bus", bus, "--sample", CONSUMER.name,
                           "--endpoint-url", endpoint],
                          capture_output=True, text=True, env={**os.environ, **CLIENT_ENVIRONMENT}, timeout=60)
    assert sent.returncode == 0, sent.stderr
    (sent_event,) = json.loads(sent.stdout)["sent"]
    sent_id = sent_event["id"]
    began = time.monotonic()
    results: list[dict] = []
    while not results and time.monotonic() - began < 20:
        for message in sqs.receive_message(QueueUrl=watch_url, WaitTimeSeconds=1).get("Messages", []):
            results.append(json.loads(message["Body"]))
    (result,) = results
    assert result["detail"]["subject"] == sent_id and result["source"] == CONSUMER.result_source
    assert input_type(CONSUMER) == event.type


def test_the_endpoint_answers_test_event_pattern_and_the_log_has_a_line_per_batch(served):
    ready, process, lines = served
    events = client("events", ready["endpoint"])
    answer = events.test_event_pattern(EventPattern=json.dumps({"detail": {"x": [{"exists": False}]}}), Event=json.dumps(
        {"id": "1", "account": "123456789012", "source": "s", "time": "2026-01-01T00:00:00Z", "region": "us-east-1",
         "resources": [], "detail-type": "d", "detail": {"x": {}}}))
    assert answer["Result"] is True
    # The batch of an event of its own (tests may run in any order, on any worker), among the unrouted-events check's
    # (it reads every event on the bus): each line names a component by its declared name, never by a construct id.
    event, _ = sample_event(CONSUMER, 0, source="serve.test")
    assert events.put_events(Entries=[to_put_events_entry(event, ready["bus"])])["FailedEntryCount"] == 0
    named = {c.name for c in PIPELINE.components} | {UNROUTED_CHECK_NAME}
    seen: list[dict] = []
    deadline = time.monotonic() + 60
    while not any(line.get("component") == CONSUMER.name for line in seen):
        try:
            seen.append(lines.get(timeout=max(0.0, deadline - time.monotonic())))
        except queue.Empty:
            pytest.fail(f"no batch line of {CONSUMER.name} within 60 s; lines: {seen}")
    line = next(line for line in seen if line["component"] == CONSUMER.name)
    assert line["kind"] == "batch" and line["records"] >= 1
    assert {line["component"] for line in seen if "component" in line} <= named, seen


def test_events_only_a_foreign_rule_takes_are_delivered_and_not_kept_as_unrouted(served):
    ready, _, _ = served
    events, sqs = client("events", ready["endpoint"]), client("sqs", ready["endpoint"])
    delays = sqs.get_queue_url(QueueName="shipping-delays")["QueueUrl"]
    sent = [f"parcel-{n}" for n in range(50)]
    for start in range(0, len(sent), 10):
        answer = events.put_events(Entries=[{"EventBusName": ready["bus"], "Source": "shipping.app",
                                             "DetailType": "ShipmentDelayed", "Detail": json.dumps({"parcel": p})}
                                            for p in sent[start:start + 10]])
        assert answer["FailedEntryCount"] == 0
    delivered, began = [], time.monotonic()
    while len(delivered) < len(sent) and time.monotonic() - began < 60:
        for message in sqs.receive_message(QueueUrl=delays, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", []):
            delivered.append(json.loads(message["Body"])["detail"]["parcel"])
            sqs.delete_message(QueueUrl=delays, ReceiptHandle=message["ReceiptHandle"])
    assert sorted(delivered) == sorted(sent)
    # The check saw each of them too (its catch-all takes every event): wait until its queue is empty.
    check_queue = ready["outputs"][f"{UNROUTED_CHECK_ID}{QUEUE_URL}"]
    counts = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
    while time.monotonic() - began < 120:
        attributes = sqs.get_queue_attributes(QueueUrl=check_queue, AttributeNames=list(counts))["Attributes"]
        if all(attributes[name] == "0" for name in counts):
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"the unrouted-events check did not drain its queue: {attributes}")
    invalid = ready["outputs"][INVALID_EVENTS_OUTPUT]
    kept = sqs.receive_message(QueueUrl=invalid, MaxNumberOfMessages=10, VisibilityTimeout=0).get("Messages", [])
    assert [m["Body"] for m in kept if "shipping.app" in m["Body"]] == []
    assert kept == []  # the invalid-events queue is empty: nothing else in this module sends a bad event


def test_a_port_in_use_is_refused_with_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "inferbus.cli", "serve", "--port", str(port)], capture_output=True,
                              text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == f"inferbus serve: port {port} is in use: stop what listens there or pass --port"


def raw(method: str, url: str, body: bytes = b"", headers: dict | None = None) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body or None, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def signed(method: str, url: str, body: bytes, headers: dict, service: str = "lambda") -> dict:
    """The headers of ``method url`` signed with SigV4 for ``service``, as curl --aws-sigv4 or an SDK signs."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(method=method, url=url, data=body, headers=headers)
    SigV4Auth(Credentials(CLIENT_ENVIRONMENT["AWS_ACCESS_KEY_ID"], CLIENT_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"]),
              service, "us-east-1").add_auth(request)
    return dict(request.headers.items())


@pytest.mark.parametrize(("method", "path"), [("POST", "/"), ("POST", "/events"), ("GET", "/nothing/here"),
                                              ("PUT", "/_inferbusy")])
def test_a_request_that_is_no_aws_call_gets_a_clear_404(served, method, path):
    ready, _, _ = served
    status, answer = raw(method, ready["endpoint"] + path, b'{"specversion": "1.0"}' if method != "GET" else b"")
    assert status == 404 and "nothing here" in answer["message"] and "/_inferbus/ingest/" in answer["message"]


def test_describe_stacks_answers_with_the_stack_s_outputs_as_the_operations_guide_reads_them(served):
    import jmespath

    ready, _, _ = served
    cloudformation = client("cloudformation", ready["endpoint"])
    (stack,) = cloudformation.describe_stacks(StackName=PIPELINE_STACK)["Stacks"]
    # The guide's `output` helper: the root stack and the stacks whose RootId is it.
    query = "Stacks[?StackId=='{root}' || RootId=='{root}'].Outputs[] | [?OutputKey=='{key}'].OutputValue | [0]"
    every = cloudformation.describe_stacks()
    for key, value in ready["outputs"].items():
        assert jmespath.search(query.format(root=stack["StackId"], key=key), every) == value, key
    assert ready["outputs"]["IngestUrl"] == ready["endpoint"] + "/_inferbus/ingest/"


def test_a_real_client_invokes_a_function_of_the_template_as_lambda_answers(served):
    """``aws lambda invoke`` against the twin: the function runs in-process with the template's environment; an
    unhandled error is ``X-Amz-Function-Error`` and its payload, as Lambda answers; an Event invocation is a 202."""
    from inferbus.model.names import FUNCTION_NAME

    ready, _, _ = served
    lambda_ = client("lambda", ready["endpoint"])
    name = ready["outputs"][CONSUMER.output_key(FUNCTION_NAME)]
    answered = lambda_.invoke(FunctionName=name, Payload=json.dumps({"Records": []}).encode())
    assert answered["StatusCode"] == 200 and "FunctionError" not in answered
    assert json.loads(answered["Payload"].read()) == {"batchItemFailures": []}
    failed = lambda_.invoke(FunctionName=name, Payload=b'{"Records": "not a list"}')
    assert failed["FunctionError"] == "Unhandled" and json.loads(failed["Payload"].read())["errorType"]
    assert lambda_.invoke(FunctionName=name, InvocationType="Event", Payload=b'{"Records": []}')["StatusCode"] == 202
    with pytest.raises(lambda_.exceptions.ResourceNotFoundException):
        lambda_.invoke(FunctionName="not-a-function-of-the-template", Payload=b"{}")


def test_the_ingest_endpoint_takes_a_signed_cloudevent_and_refuses_an_unsigned_one(served):
    ready, _, _ = served
    url = ready["outputs"]["IngestUrl"] + "events"
    event = {"specversion": "1.0", "id": "ingest-serve-1", "source": "my.producer", "type": "TextSubmitted",
             "data": {"text": "The parcel arrived two days late."}}
    body = json.dumps(event).encode()
    headers = {"Content-Type": "application/cloudevents+json"}
    assert raw("POST", url, body, headers) == (403, {"Message": "Forbidden"})  # a function URL with IAM auth
    assert raw("POST", url, body, signed("POST", url, body, headers, service="sqs"))[0] == 403  # signed for another
    status, answer = raw("POST", url, body, signed("POST", url, body, headers))
    assert status == 202 and answer["id"] == "ingest-serve-1", answer
    bad = json.dumps({**event, "id": "ingest-serve-2", "data": {"text": "   "}}).encode()
    status, answer = raw("POST", url, bad, signed("POST", url, bad, headers))
    assert status == 400 and "text" in json.dumps(answer)  # the contract's reason, as in AWS

def test_the_endpoint_refuses_what_aws_refuses_with_aws_error_shapes(served, template):
    """JSON nested thousands of levels deep is AWS's 400 (never an HTML 500); a reserved source from a client of the
    endpoint fails as the bus policy makes it fail in AWS."""
    ready, _, _ = served
    request = urllib.request.Request(ready["endpoint"], data=b'{"Entries": ' + b"[" * 3000 + b"]" * 3000 + b"}",
                                     method="POST", headers={
                                         "X-Amz-Target": "AWSEvents.PutEvents", "Content-Type": "application/x-amz-json-1.1",
                                         "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20261205/us-east-1/events/"
                                                          "aws4_request, SignedHeaders=host, Signature=0"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 400
    assert json.loads(refused.value.read())["__type"] == "SerializationException"
    (source, *_) = reserved_sources(template)
    answer = client("events", ready["endpoint"]).put_events(Entries=[
        {"EventBusName": ready["bus"], "Source": source, "DetailType": "Forged", "Detail": "{}"}])
    assert answer["Entries"][0]["ErrorCode"] == "NotAuthorizedForSourceException"
