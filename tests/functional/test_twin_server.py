"""``inferbus serve``'s HTTP server (inferbus/twin_http.py, ``TwinServer``): connections kept alive as AWS's
endpoints keep them, a long poll that holds up no other request, and a stop that closes every connection."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from contextlib import contextmanager

import boto3
import pytest
from botocore.config import Config

from inferbus.runtime import moto_patches
from inferbus.twin_http import TwinRoutes, TwinServer, twin_server
from tests.redis_server import free_port

REGION = "us-east-1"
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": REGION}


@pytest.fixture
def endpoint():
    """Patched moto behind the twin's routes and server on a loopback port; yields (port, server)."""
    from moto import mock_aws

    with mock_aws():
        moto_patches.install()
        port = free_port()
        server = twin_server(lambda app: TwinRoutes(app, region=REGION, ingest=None), host="127.0.0.1", port=port)
        server.start()
        try:
            yield port, server
        finally:
            server.stop()
            moto_patches.uninstall()


@contextmanager
def serving(app):
    """``app`` behind the twin's server on a loopback port; yields the port."""
    port = free_port()
    server = TwinServer(app, host="127.0.0.1", port=port)
    server.start()
    try:
        yield port
    finally:
        server.stop()


def sqs_of(port: int, **config: object):
    return boto3.session.Session(**CREDENTIALS).client(
        "sqs", endpoint_url=f"http://127.0.0.1:{port}", config=Config(retries={"max_attempts": 1}, **config))


def test_requests_on_one_connection_are_each_answered(endpoint):
    """Three requests down one connection: each answered on it, none told to close (moto's server closed every one)."""
    port, _ = endpoint
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        answers = []
        for path in ("/first", "/second", "/third"):
            connection.request("GET", path)
            answer = connection.getresponse()
            answers.append((answer.status, json.loads(answer.read())["message"].split(":")[0], answer.getheader("Connection")))
    finally:
        connection.close()
    assert answers == [(404, "GET /first", None), (404, "GET /second", None), (404, "GET /third", None)]


def test_an_sdk_client_makes_one_connection_for_many_calls(endpoint):
    """boto3's pool keeps its connection: 30 SQS calls from one thread open one connection to the server."""
    port, _ = endpoint
    sqs = sqs_of(port)
    url = sqs.create_queue(QueueName="kept")["QueueUrl"]
    opened = []
    real_connect = socket.socket.connect

    def counted(self, address):
        if address == ("127.0.0.1", port):
            opened.append(address)
        return real_connect(self, address)

    socket.socket.connect = counted
    try:
        for n in range(10):
            sqs.send_message(QueueUrl=url, MessageBody=str(n))
        received = []
        while len(received) < 10:
            messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
            for message in messages:
                received.append(int(message["Body"]))
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    finally:
        socket.socket.connect = real_connect
    assert sorted(received) == list(range(10))
    assert len(opened) <= 1, f"{len(opened)} connections for {10 + 2 * len(received)} calls"


def test_a_long_poll_holds_up_no_other_request(endpoint):
    """A client long-polls an empty queue; meanwhile another client's calls are answered, and its message ends the wait."""
    port, _ = endpoint
    sqs = sqs_of(port, read_timeout=30)
    url = sqs.create_queue(QueueName="waited")["QueueUrl"]
    got: list[list[str]] = []
    waiting = threading.Thread(target=lambda: got.append([m["Body"] for m in sqs_of(port, read_timeout=30).receive_message(
        QueueUrl=url, WaitTimeSeconds=20).get("Messages", [])]))
    waiting.start()
    other = sqs_of(port)
    listed = [other.list_queues()["QueueUrls"] for _ in range(5)]
    assert waiting.is_alive(), "the long poll returned before any message was sent"
    other.send_message(QueueUrl=url, MessageBody="wake")
    waiting.join(timeout=25)
    assert listed == [[url]] * 5
    assert got == [["wake"]]


def test_stop_closes_the_port_and_every_connection(endpoint):
    port, server = endpoint
    kept = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    kept.request("GET", "/before")
    assert kept.getresponse().read()
    server.stop()
    with pytest.raises(OSError):
        kept.request("GET", "/after")
        kept.getresponse()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_a_long_poll_in_flight_does_not_keep_a_stopping_server_up(endpoint):
    """Ctrl-C on serve while a client long-polls: the server stops, and the client is told, not left waiting 20 s."""
    port, server = endpoint
    sqs = sqs_of(port, read_timeout=30)
    url = sqs.create_queue(QueueName="stopped")["QueueUrl"]
    outcome: list[str] = []

    def poll() -> None:
        try:
            sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20)
            outcome.append("answered")
        except Exception as error:  # noqa: BLE001 - which error botocore raises is not the point
            outcome.append(type(error).__name__)

    waiting = threading.Thread(target=poll)
    waiting.start()
    other = sqs_of(port)
    assert other.list_queues()["QueueUrls"] == [url]  # the server is up, the poll is in flight
    server.stop()
    waiting.join(timeout=15)
    assert not waiting.is_alive(), "the long poll outlived the server"
    assert outcome and outcome != ["answered"], outcome


def test_an_application_error_is_a_500_and_the_next_connection_is_served():
    """A request the application fails on answers 500 (not a dropped connection); the server goes on."""
    calls: list[str] = []

    def failing_then_fine(environ, start_response):
        calls.append(environ["PATH_INFO"])
        if environ["PATH_INFO"] == "/fail":
            raise RuntimeError("the application broke")
        body = environ["wsgi.input"].read()
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]

    with serving(failing_then_fine) as port:
        failed = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        failed.request("POST", "/fail", body=b"lost")
        assert failed.getresponse().status == 500
        failed.close()
        echoed = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for body in (b"first", b"", b"x" * 70_000):  # an unread or long body leaves the connection in step
            echoed.request("POST", "/echo", body=body)
            answer = echoed.getresponse()
            assert (answer.status, answer.read()) == (200, body)
        echoed.request("POST", "/echo", body=iter([b"chunked ", b"body"]), encode_chunked=True)  # no length: framed by chunks
        answer = echoed.getresponse()
        assert (answer.status, answer.read()) == (200, b"chunked body")
        echoed.request("POST", "/echo", body=b"after")
        answer = echoed.getresponse()
        assert (answer.status, answer.read()) == (200, b"after")
        echoed.close()
    assert calls == ["/fail"] + ["/echo"] * 5


def test_a_body_the_application_leaves_unread_does_not_become_the_next_request():
    def ignores_body(environ, start_response):
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    with serving(ignores_body) as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        answers = []
        for body in (b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", b"y" * 100_000, b""):
            connection.request("POST", "/", body=body)
            response = connection.getresponse()
            answers.append((response.status, response.read()))
        connection.close()
    assert answers == [(200, b"ok")] * 3


def _signed_for(service: str) -> dict[str, str]:
    return {"PATH_INFO": "/", "REQUEST_METHOD": "POST", "HTTP_AUTHORIZATION":
            f"AWS4-HMAC-SHA256 Credential=AKID/20261207/{REGION}/{service}/aws4_request, SignedHeaders=host, Signature=x"}


def test_what_a_service_needs_first_runs_once_before_its_first_request_and_the_others_wait():
    import time

    answered: list[str] = []
    made: list[str] = []

    def app(environ: dict, start_response: object) -> list[bytes]:
        answered.append(environ["HTTP_AUTHORIZATION"].split("/")[3] + (" after the stack" if made else " before"))
        return [b"{}"]

    def make_stack() -> None:
        time.sleep(0.3)  # a concurrent first call must wait for it, not pass it
        made.append("stack")

    routes = TwinRoutes(app, region=REGION, ingest=None, before_first={"cloudformation": make_stack})
    routes(_signed_for("sqs"), lambda *_: None)
    assert made == [] and answered == ["sqs before"]  # another service does not make it
    calls = [threading.Thread(target=routes, args=(_signed_for("cloudformation"), lambda *_: None)) for _ in range(3)]
    for call in calls:
        call.start()
    for call in calls:
        call.join(timeout=10)
    routes(_signed_for("cloudformation"), lambda *_: None)
    assert made == ["stack"]
    assert answered[1:] == ["cloudformation after the stack"] * 4


def test_an_operation_moto_lacks_is_a_501_naming_it_at_once_not_a_500_retried(endpoint, capsys):
    """SQS's ListMessageMoveTasks (JSON protocol) and CloudFormation's ListGeneratedTemplates (query protocol, XML):
    operations AWS has and moto does not answer. A client hears which one in its own protocol, without retries."""
    import time

    from botocore.exceptions import ClientError

    port, _ = endpoint
    session = boto3.session.Session(**CREDENTIALS)
    calls = [(sqs_of(port), "list_message_move_tasks", {"SourceArn": f"arn:aws:sqs:{REGION}:123456789012:q"},
              "ListMessageMoveTasks"),
             (session.client("cloudformation", endpoint_url=f"http://127.0.0.1:{port}"), "list_generated_templates", {},
              "ListGeneratedTemplates")]
    for client, operation, parameters, named in calls:
        started = time.monotonic()
        with pytest.raises(ClientError) as raised:
            getattr(client, operation)(**parameters)
        error = raised.value.response
        assert (error["ResponseMetadata"]["HTTPStatusCode"], error["Error"]["Code"]) == (501, "NotImplemented")
        assert f"{named} ({client.meta.service_model.signing_name}) is not implemented by the local twin" in \
            error["Error"]["Message"]
        assert error["ResponseMetadata"]["RetryAttempts"] == 0 and time.monotonic() - started < 5
    assert "Traceback" not in capsys.readouterr().err


def test_an_operation_the_service_does_not_have_is_unknown_as_aws_answers_it():
    def app(environ: dict, start_response: object) -> list[bytes]:
        raise NotImplementedError("The frobnicate action has not been implemented")

    answered: list[tuple[str, list]] = []
    routes = TwinRoutes(app, region=REGION, ingest=None)
    body = routes({**_signed_for("events"), "CONTENT_TYPE": "application/x-amz-json-1.1"},
                  lambda status, headers: answered.append((status, headers)))
    assert answered[0][0] == "400 Bad Request" and ("X-Amzn-ErrorType", "UnknownOperationException") in answered[0][1]
    assert json.loads(b"".join(body)) == {"__type": "UnknownOperationException",
                                          "message": "Frobnicate is not an operation of events"}
