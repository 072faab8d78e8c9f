"""``inferbus serve``'s HTTP server (inferbus/twin_http.py, ``TwinServer``): connections kept alive as AWS's
endpoints keep them, a long poll that holds up no other request, and a stop that closes every connection."""

from __future__ import annotations

import http.client
import json
import socket
import threading

import boto3
import pytest
from botocore.config import Config

from inferbus.runtime import moto_patches
from inferbus.twin_http import TwinRoutes, twin_server

REGION = "us-east-1"
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": REGION}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


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
