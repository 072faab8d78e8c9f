"""The console's endpoints on an in-process pipeline, through WSGI (no server, no browser): what they
read, what they change, and what they refuse. tests/e2e/test_console_browser.py clicks the page itself."""

from __future__ import annotations

import json
import re

import pytest
from inferbus_lambda.contracts import to_put_events_entry
from inferbus_lambda.rejections import DEAD_LETTER_ATTRIBUTES
from werkzeug.test import Client

from inferbus.console import CONSOLE_PATH, ConsoleApp, ConsoleState
from inferbus.demo.inputs import sample_event, sample_events
from inferbus.local import LocalPipeline
from inferbus.runtime.queue_ops import delete_messages, receive_all
from tests.declared import DEMO, PIPELINE

CONSUMER = next(c for c in PIPELINE.consumers if c.name in DEMO)
REVIEWED = next(w for w in PIPELINE.workflows if w.review_queue)  # a workflow that waits for a person
# The consumer whose results the reviewed workflow takes, and whose demo samples reach it.
FEEDER = next(c for c in PIPELINE.consumers if REVIEWED.accepts.type in c.emits and c.name in DEMO)
HOST = "localhost:4566"
API = CONSOLE_PATH + "api/"


def aws_endpoint(environ, start_response):
    """Stands in for moto's app: what the console does not answer goes on here."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"aws"]


@pytest.fixture(scope="module")
def console(template):
    with LocalPipeline(template) as pipeline:
        app = ConsoleApp(ConsoleState(pipeline), aws_endpoint, host="127.0.0.1", port=4566)
        yield pipeline, app, Client(app)


def token_of(client: Client) -> str:
    page = client.get(CONSOLE_PATH, headers={"Host": HOST}).get_data(as_text=True)
    (token,) = re.findall(r'<meta name="inferbus-token" content="([^"]+)">', page)
    return token


def post(client: Client, endpoint: str, body: dict, **headers: str):
    return client.post(API + endpoint, data=json.dumps(body), headers={"Host": HOST, "Content-Type": "application/json",
                                                                       **headers})


def get(client: Client, endpoint: str):
    answer = client.get(API + endpoint, headers={"Host": HOST})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return answer.json


def empty(pipeline, url: str) -> None:
    """Delete every message (PurgeQueue may run once a minute per queue)."""
    delete_messages(pipeline.sqs, url, receive_all(pipeline.sqs, url))


def envelope(event) -> str:
    """The event as EventBridge delivers it to a queue."""
    entry = to_put_events_entry(event, "inferbus")
    return json.dumps({"version": "0", "id": f"eb-{event.id}", "source": entry["Source"], "detail-type": entry["DetailType"],
                       "account": "123456789012", "time": "2026-12-05T00:00:00Z", "region": "us-east-1", "resources": [],
                       "detail": json.loads(entry["Detail"])})


def test_other_paths_go_to_the_aws_endpoint_and_the_page_is_served(console):
    _, app, client = console
    for path in ("/", "/_inferbusx", "/123456789012/queue"):
        assert client.get(path).get_data() == b"aws"
    page = client.get(CONSOLE_PATH, headers={"Host": HOST})
    assert page.status_code == 200 and app.token in page.get_data(as_text=True)
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]  # no inline script may run
    assert client.get("/_inferbus", headers={"Host": HOST}).headers["Location"] == CONSOLE_PATH
    script = client.get(CONSOLE_PATH + "console.js", headers={"Host": HOST}).get_data(as_text=True)
    assert "innerHTML" not in script and "textContent" in script  # data is never parsed as HTML


def test_rule_counts_and_consumer_counts_follow_the_events(console):
    pipeline, _, client = console
    before = {rule["name"]: rule["matched"] for rule in get(client, "overview")["rules"]}
    event, _ = sample_event(CONSUMER, 0, source="console.test")
    pipeline.put_events([to_put_events_entry(event, pipeline.bus_name)])
    pipeline.drain()
    overview = get(client, "overview")
    queue_name = pipeline.consumer(CONSUMER.name).queue_url.rsplit("/", 1)[-1]
    (rule,) = [rule for rule in overview["rules"] if queue_name in rule["targets"]]
    assert rule["matched"] == before[rule["name"]] + 1
    consumer = next(c for c in overview["consumers"] if c["name"] == CONSUMER.name)
    assert consumer["records"] >= 1 and consumer["failed_records"] == 0
    roles = {queue["url"]: queue["role"] for queue in overview["queues"]}
    assert roles[pipeline.consumer(CONSUMER.name).dead_letter_queue_url] == "dead letters"
    assert roles[pipeline.invalid_events_url] == "invalid events"
    # Every component's failures land in a DLQ the console names it by (its queue's, its rule target's).
    owners = {queue["component"] for queue in overview["queues"] if queue["role"] == "dead letters"}
    assert owners >= {component.name for component in PIPELINE.components}
    assert {w["name"] for w in overview["workflows"]} == {w.name for w in PIPELINE.workflows}
    events = get(client, "events")
    assert any(e["detail_type"] in CONSUMER.emits and e["subject"] == event.id for e in events)


def test_redrive_moves_back_what_can_succeed_and_keeps_what_cannot(console):
    pipeline, app, client = console
    consumer = pipeline.consumer(CONSUMER.name)
    good, _ = sample_event(CONSUMER, 1, source="console.test")
    pipeline.sqs.send_message(QueueUrl=consumer.dead_letter_queue_url, MessageBody=envelope(good))
    pipeline.sqs.send_message(QueueUrl=consumer.dead_letter_queue_url, MessageBody='{"detail": "not an event"}',
                              MessageAttributes={DEAD_LETTER_ATTRIBUTES[2]: {"DataType": "String", "StringValue": "bad"}})
    (queue,) = [q for q in get(client, "dead-letters") if q["url"] == consumer.dead_letter_queue_url]
    assert queue["component"] == CONSUMER.name and queue["source"] == consumer.queue_url.rsplit("/", 1)[-1]
    assert sorted(m["valid"] for m in queue["messages"]) == [False, True]
    assert any("bad" in m["reason"] for m in queue["messages"])

    answer = post(client, "dead-letters/redrive", {"queue": queue["queue"]}, **{"X-Inferbus-Token": app.token})
    assert answer.status_code == 200 and answer.json["moved"] == 1
    pipeline.drain()
    assert any(e["detail_type"] in CONSUMER.emits and e["subject"] == good.id for e in get(client, "events"))
    (queue,) = [q for q in get(client, "dead-letters") if q["url"] == consumer.dead_letter_queue_url]
    assert [m["valid"] for m in queue["messages"]] == [False]  # the one that would fail again stays
    empty(pipeline, consumer.dead_letter_queue_url)


def test_a_review_is_listed_and_approved_and_the_workflow_completes(console):
    pipeline, app, client = console
    pipeline.put_events([to_put_events_entry(event, pipeline.bus_name)
                         for event, _ in sample_events(FEEDER, 10, source="console.test")])
    pipeline.drain()
    reviews = get(client, "reviews")
    assert reviews and all(r["workflow"] == REVIEWED.name and r["case"]["transaction_id"] for r in reviews)
    assert all("task_token" not in json.dumps(r) and "taskToken" not in json.dumps(r) for r in reviews)
    waiting = [x for x in get(client, "executions") if x["waiting_for_review"]]
    assert len(waiting) == len(reviews) and all(x["workflow"] == REVIEWED.name and x["stages"] for x in waiting)

    first = reviews[0]["transaction_id"]
    answer = post(client, "reviews/decide", {"workflow": REVIEWED.name, "transaction_id": first, "decision": "approve",
                                             "reviewer": "ana", "note": "<b>ok</b>"}, **{"X-Inferbus-Token": app.token})
    assert answer.json == {"transaction_id": first, "outcome": "approved", "detail": ""}
    pipeline.drain()
    assert first not in {r["transaction_id"] for r in get(client, "reviews")}
    done = [e for e in get(client, "events") if e["source"] == REVIEWED.result_source and e["detail_type"] in REVIEWED.emits]
    assert done, get(client, "events")
    again = post(client, "reviews/decide", {"workflow": REVIEWED.name, "transaction_id": first, "decision": "reject",
                                            "reviewer": "ana"}, **{"X-Inferbus-Token": app.token})
    assert again.json["outcome"] == "not-found"  # decided already


REFUSED = [
    # (what, method, endpoint, headers, status)
    ("no token", "POST", "dead-letters/redrive", {"Content-Type": "application/json"}, 403),
    ("a wrong token", "POST", "dead-letters/redrive", {"Content-Type": "application/json", "X-Inferbus-Token": "x"}, 403),
    ("another origin", "POST", "dead-letters/redrive", {"Content-Type": "application/json", "Origin": "http://evil.test",
                                                        "X-Inferbus-Token": "TOKEN"}, 403),
    ("a form post", "POST", "dead-letters/redrive", {"Content-Type": "text/plain", "X-Inferbus-Token": "TOKEN"}, 415),
    ("a GET on an action", "GET", "dead-letters/redrive", {}, 405),
    ("a POST on a read", "POST", "reviews", {"Content-Type": "application/json", "X-Inferbus-Token": "TOKEN"}, 405),
    ("a rebound host name", "GET", "reviews", {"Host": "evil.test:4566"}, 403),
    ("a rebound host on a decision", "POST", "reviews/decide", {"Host": "evil.test:4566", "X-Inferbus-Token": "TOKEN",
                                                               "Content-Type": "application/json"}, 403),
    ("an unknown endpoint", "GET", "nothing", {}, 404),
]


@pytest.mark.parametrize(("what", "method", "endpoint", "headers", "status"), REFUSED, ids=[case[0] for case in REFUSED])
def test_requests_not_from_the_console_page_are_refused(console, what, method, endpoint, headers, status):
    pipeline, app, client = console
    consumer = pipeline.consumer(CONSUMER.name)
    event, _ = sample_event(CONSUMER, 2, source="console.test")
    pipeline.sqs.send_message(QueueUrl=consumer.dead_letter_queue_url, MessageBody=envelope(event))
    headers = {"Host": HOST, **{k: (app.token if v == "TOKEN" else v) for k, v in headers.items()}}
    dlq = consumer.dead_letter_queue_url.rsplit("/", 1)[-1]
    body = json.dumps({"queue": dlq}) if method == "POST" else None
    answer = client.open(API + endpoint, method=method, data=body, headers=headers)
    assert answer.status_code == status, answer.get_data(as_text=True)
    assert set(answer.json) == {"error"}
    assert len(pipeline.peek(consumer.dead_letter_queue_url)) == 1  # nothing moved
    empty(pipeline, consumer.dead_letter_queue_url)


def test_bad_action_bodies_are_refused_with_a_reason(console):
    _, app, client = console
    token = {"X-Inferbus-Token": token_of(client)}
    assert token["X-Inferbus-Token"] == app.token
    cases = [("dead-letters/redrive", {"queue": "no-such-queue"}, "is no dead-letter queue of the stack"),
             ("dead-letters/redrive", {}, "queue (the dead-letter queue's name) is required"),
             ("reviews/decide", {"workflow": "nope", "transaction_id": "t", "decision": "approve", "reviewer": "a"},
              "no workflow 'nope' with a review queue"),
             ("reviews/decide", {"workflow": REVIEWED.name, "transaction_id": "t", "decision": "maybe", "reviewer": "a"},
              "decision must be approve or reject")]
    for endpoint, body, reason in cases:
        answer = post(client, endpoint, body, **token)
        assert answer.status_code == 400 and reason in answer.json["error"], (endpoint, body, answer.json)
    not_json = client.post(API + "dead-letters/redrive", data="{nope", headers={"Host": HOST, **token,
                                                                               "Content-Type": "application/json"})
    assert not_json.status_code == 400 and not_json.json == {"error": "the body is not JSON"}


BROWSER_CALLS = [
    # (what, bound to, request headers, answered by the AWS endpoint)
    ("an AWS client (no Origin)", "127.0.0.1", {}, True),
    ("a page on localhost (the JavaScript SDK)", "127.0.0.1", {"Origin": "http://localhost:3000"}, True),
    ("a page on 127.0.0.1", "127.0.0.1", {"Origin": "http://127.0.0.1:8080", "Sec-Fetch-Site": "cross-site"}, True),
    ("a page on another site", "127.0.0.1", {"Origin": "http://evil.test"}, False),
    ("a sandboxed page or a file", "127.0.0.1", {"Origin": "null"}, False),
    ("an image on another site's page", "127.0.0.1", {"Sec-Fetch-Site": "cross-site"}, False),
    ("a page on the address bound to", "0.0.0.0", {"Origin": "http://192.168.1.5:3000", "Host": "192.168.1.5:4566"}, True),
    ("another site, bound to every address", "0.0.0.0", {"Origin": "http://evil.test", "Host": "192.168.1.5:4566"}, False),
]


@pytest.mark.parametrize(("what", "bound", "headers", "answered"), BROWSER_CALLS, ids=[case[0] for case in BROWSER_CALLS])
def test_pages_of_other_sites_cannot_call_the_aws_endpoint(console, what, bound, headers, answered):
    """moto grants every origin's CORS preflight: without this, any page could read a task token off
    the review queue and answer it through the AWS API, around the console's token."""
    _, app, _ = console
    guarded = Client(ConsoleApp(app.state, aws_endpoint, host=bound, port=4566))
    answer = guarded.post("/", data="Action=ReceiveMessage", headers={"Host": HOST, **headers})
    assert (answer.get_data() == b"aws") is answered, answer.get_data(as_text=True)
    if not answered:
        assert answer.status_code == 403 and "refused" in answer.json["error"]
