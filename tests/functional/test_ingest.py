"""The HTTP ingest endpoint, embedded: the function behind the URL, invoked as a function URL would."""

from __future__ import annotations

import json

import pytest
from inferbus_lambda.contracts import parse_event, to_put_events_entry
from inferbus_lambda.ingest import MAX_EVENT_BYTES

from inferbus.local import LocalPipeline
from tests.declared import PIPELINE, RESULT_SOURCES

TEXT = next(w for w in PIPELINE.workflows if w.accepts.type == "TextSubmitted")
STRUCTURED = {"Content-Type": "application/cloudevents+json"}
TRACEPARENT = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"  # W3C Trace Context's own example ids
HEADER_TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"


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
        # A reserved source however cased: ingest refuses on its own rule (the bus policy compares as IAM does).
        "a reserved source, upper case": (json.dumps(cloudevent("in-9", source=RESULT_SOURCES[TEXT.name].upper())),
                                          STRUCTURED),
        "a reserved source, title case": (json.dumps(cloudevent("in-10", source=RESULT_SOURCES[TEXT.name].title())),
                                          STRUCTURED),
        # Who may send before what was sent: a 403 whatever the data holds.
        "a reserved source, data breaking its contract": (
            json.dumps({**cloudevent("in-20", source=RESULT_SOURCES[TEXT.name].upper()), "data": {}}), STRUCTURED),
        "not UTF-8": (json.dumps(cloudevent("in-11")).encode().replace(b"parcel", b"p\xe4rcel"), STRUCTURED),
        "not UTF-8, binary": (b'{"text": "caf\xe9"}', binary("in-12")),
        "a lone surrogate": (json.dumps(cloudevent("in-13", text="LONE")).replace("LONE", "\\ud800"), STRUCTURED),
        "empty": (b"", STRUCTURED),
        "empty, binary": (b"", binary("in-14")),
        "a JSON array": (json.dumps([cloudevent("in-15")]), STRUCTURED),
        "nested 3,000 levels": ('{"data": ' + "[" * 3000 + "]" * 3000 + "}", STRUCTURED),
        "a number past a float": (json.dumps(cloudevent("in-16"))[:-1] + ', "n": 1e400}', STRUCTURED),
        "an integer of 5,000 digits": (json.dumps(cloudevent("in-17"))[:-1] + ', "n": ' + "9" * 5000 + "}", STRUCTURED),
        "a charset other than UTF-8": (json.dumps(cloudevent("in-18")),
                                       {"Content-Type": "application/cloudevents+json; charset=ISO-8859-1"}),
        "a malformed traceparent": (json.dumps(cloudevent("in-19", traceparent="00-xyz")), STRUCTURED),
        "traced, structured": (json.dumps(cloudevent("tr-1", traceparent=TRACEPARENT, tracestate="vendor=1")), STRUCTURED),
        "traced, binary": (json.dumps({"text": "Traced."}), binary("tr-2", **{"ce-traceparent": TRACEPARENT})),
        "traced, by the request's headers": (json.dumps(cloudevent("tr-3")),
                                             STRUCTURED | {"traceparent": HEADER_TRACE, "tracestate": "other=2"}),
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
    ("a reserved source, upper case", 403, "ReservedSource"), ("a reserved source, title case", 403, "ReservedSource"),
    ("a reserved source, data breaking its contract", 403, "ReservedSource"),
    ("not UTF-8", 400, "InvalidEventError"), ("not UTF-8, binary", 400, "InvalidEventError"),
    ("a lone surrogate", 400, "InvalidEventError"), ("empty", 400, "InvalidEventError"),
    ("empty, binary", 400, "InvalidEventError"), ("a JSON array", 400, "InvalidEventError"),
    ("nested 3,000 levels", 400, "InvalidEventError"), ("a number past a float", 400, "InvalidEventError"),
    ("an integer of 5,000 digits", 400, "InvalidEventError"), ("a charset other than UTF-8", 415, "UnsupportedContentType"),
    ("a malformed traceparent", 400, "InvalidEventError"),
    ("traced, structured", 202, None), ("traced, binary", 202, None), ("traced, by the request's headers", 202, None),
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
    assert set(inputs) == {"in-1", "in-2", "in-3", "tr-1", "tr-2", "tr-3"}
    assert inputs["in-2"]["correlationid"] == "req-42"  # binary mode: a ce-* header is an attribute
    assert inputs["in-3"]["correlationid"] == "in-3" and inputs["in-3"]["time"]  # defaults: the id, the receipt time
    analysed = {e["detail"]["subject"] for e in delivered if e["detail-type"] in TEXT.emits}
    assert analysed == {"in-1", "in-2", "in-3", "tr-1", "tr-2", "tr-3"}
    assert "contract" not in found["structured"]["body"]


def test_the_reason_names_the_field(answers):
    found, _ = answers
    assert "data.text" in json.loads(found["breaks its contract"]["body"])["reason"]
    assert "unknown event type 'Teleported'" in json.loads(found["unknown type"]["body"])["reason"]


def test_a_body_that_is_not_utf8_gets_a_reason_never_the_codec_message_of_a_crash(answers):
    found, _ = answers
    for name in ("not UTF-8", "not UTF-8, binary"):
        reason = json.loads(found[name]["body"])["reason"]
        assert "not UTF-8" in reason and "codec" not in reason, (name, reason)


def test_the_trace_context_is_carried_onto_the_bus_and_into_the_xray_trace_header(answers):
    """The CloudEvents distributed tracing extension: the attributes (or the request's W3C headers) stay on the
    event, and the bus entry's TraceHeader is the same trace in X-Ray's form."""
    _, delivered = answers
    inputs = {e["detail"]["id"]: e["detail"] for e in delivered if e["detail-type"] == "TextSubmitted"}
    assert (inputs["tr-1"]["traceparent"], inputs["tr-1"]["tracestate"]) == (TRACEPARENT, "vendor=1")
    assert inputs["tr-2"]["traceparent"] == TRACEPARENT  # binary mode: ce-traceparent
    assert (inputs["tr-3"]["traceparent"], inputs["tr-3"]["tracestate"]) == (HEADER_TRACE, "other=2")
    assert "traceparent" not in inputs["in-1"]
    entry = to_put_events_entry(parse_event(inputs["tr-1"]), "bus")
    _, trace_id, parent, flags = TRACEPARENT.split("-")
    root, parent_field, sampled = entry["TraceHeader"].split(";")
    assert root == f"Root=1-{trace_id[:8]}-{trace_id[8:]}" and parent_field == f"Parent={parent}"
    assert sampled == f"Sampled={int(flags) & 1}"
    assert "TraceHeader" not in to_put_events_entry(parse_event(inputs["in-1"]), "bus")
