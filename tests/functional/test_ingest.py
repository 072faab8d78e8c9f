"""The HTTP ingest endpoint, embedded: the function behind the URL, invoked as a function URL would."""

from __future__ import annotations

import json

import pytest
from inferbus_lambda.ingest import MAX_EVENT_BYTES

from inferbus.local import LocalPipeline
from tests.declared import PIPELINE, RESULT_SOURCES

TEXT = next(w for w in PIPELINE.workflows if w.accepts.type == "TextSubmitted")
STRUCTURED = {"Content-Type": "application/cloudevents+json"}


def cloudevent(event_id: str, text: str = "The parcel arrived two days late.", **changes) -> dict:
    return {"specversion": "1.0", "id": event_id, "source": "my.producer", "type": "TextSubmitted",
            "time": "2026-12-02T10:00:00Z", "correlationid": f"req-{event_id}", "data": {"text": text}, **changes}


def binary(event_id: str, **extra: str) -> dict:
    return {"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": event_id, "ce-source": "my.producer",
            "ce-type": "TextSubmitted", **extra}


@pytest.fixture(scope="module")
def answers(template):
    """Every request once; the answers, the ingest function's metrics, and what the bus carried."""
    requests = {
        "structured": (json.dumps(cloudevent("in-1")), STRUCTURED),
        "binary": (json.dumps({"text": "Lovely service, thank you."}), binary("in-2", **{"ce-correlationid": "req-42"})),
        "binary without a time": (json.dumps({"text": "Fine."}), binary("in-3")),
        "breaks its contract": (json.dumps(cloudevent("in-4", text="   ")), STRUCTURED),
        "unknown type": (json.dumps(cloudevent("in-5", type="Teleported")), STRUCTURED),
        "not JSON": ("{oops", STRUCTURED),
        "too large": (json.dumps(cloudevent("in-6", text="x" * (MAX_EVENT_BYTES + 1))), STRUCTURED),
        "neither mode": (json.dumps(cloudevent("in-7")), {"Content-Type": "text/plain"}),
        "batched mode": ("[]", {"Content-Type": "application/cloudevents-batch+json"}),
        "a reserved source": (json.dumps(cloudevent("in-8", source=RESULT_SOURCES[TEXT.name])), STRUCTURED),
    }
    with LocalPipeline(template) as pipeline:
        found = {name: pipeline.ingest(body, headers) for name, (body, headers) in requests.items()}
        pipeline.drain()
        delivered = pipeline.tapped_events()
    return found, delivered


@pytest.mark.parametrize(("request_name", "status", "error"), [
    ("structured", 202, None), ("binary", 202, None), ("binary without a time", 202, None),
    ("breaks its contract", 400, "InvalidEventError"), ("unknown type", 400, "InvalidEventError"),
    ("not JSON", 400, "InvalidEventError"), ("too large", 413, "EventTooLarge"),
    ("neither mode", 415, "UnsupportedContentType"), ("batched mode", 415, "UnsupportedContentType"),
    ("a reserved source", 403, "ReservedSource"),
])
def test_each_request_gets_its_status_and_reason(answers, request_name, status, error):
    found, _ = answers
    answer = found[request_name]
    body = json.loads(answer["body"])
    assert answer["statusCode"] == status, body
    if error is None:
        assert body["id"] and body["type"] == "TextSubmitted"
    else:
        assert body["error"] == error and body["reason"]


def test_accepted_events_go_on_the_bus_and_through_the_pipeline_refused_ones_do_not(answers):
    found, delivered = answers
    inputs = {e["detail"]["id"]: e["detail"] for e in delivered if e["detail-type"] == "TextSubmitted"}
    assert set(inputs) == {"in-1", "in-2", "in-3"}
    assert inputs["in-2"]["correlationid"] == "req-42"  # binary mode: a ce-* header is an attribute
    assert inputs["in-3"]["correlationid"] == "in-3" and inputs["in-3"]["time"]  # defaults: the id, the receipt time
    analysed = {e["detail"]["subject"] for e in delivered if e["detail-type"] in TEXT.emits}
    assert analysed == {"in-1", "in-2", "in-3"}
    assert "contract" not in found["structured"]["body"]


def test_the_reason_names_the_field(answers):
    found, _ = answers
    assert "data.text" in json.loads(found["breaks its contract"]["body"])["reason"]
    assert "unknown event type 'Teleported'" in json.loads(found["unknown type"]["body"])["reason"]
