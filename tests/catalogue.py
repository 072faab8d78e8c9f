"""Malformed inputs for every kind of event, each with the start of the reason it must give.

Each case is ``(name, body, reason_prefix)``: ``body`` is what a consumer's queue or a
workflow receives (the EventBridge envelope as JSON text), built from a valid event by one
corruption. ``CASES`` are ImageSubmitted bodies for the image classifier (the envelope cases
live here too: they fail the same way for every type), ``TRANSACTION_CASES`` go to the risk
scorer, ``TEXT_CASES`` and ``SCENE_CASES`` to the text and vision workflows.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any


VALID_DATA = {
    "ImageSubmitted": {"pixels": [3] * 64},
    "SceneSubmitted": {"width": 16, "height": 16, "pixels": [3] * 256},
    "TextSubmitted": {"text": "The parcel arrived on time and intact."},
    "TransactionSubmitted": {"customer": {"id": "customer-1", "segment": "new"}, "features": [1.5] * 30},
}


def valid_detail(event_id: str | None = None, event_type: str = "ImageSubmitted") -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": event_id or str(uuid.uuid4()),
        "source": "catalogue.producer",
        "type": event_type,
        "time": datetime.now(UTC).isoformat(),
        "correlationid": "catalogue",
        "datacontenttype": "application/json",
        "data": json.loads(json.dumps(VALID_DATA[event_type])),
    }


def envelope(detail: Any) -> dict[str, Any]:
    source = detail.get("source") if isinstance(detail, dict) else None
    detail_type = detail.get("type") if isinstance(detail, dict) else None
    return {"version": "0", "id": str(uuid.uuid4()), "source": source, "detail-type": detail_type, "account": "123456789012",
            "time": "2026-12-02T00:00:00Z", "region": "us-east-1", "resources": [], "detail": detail}


def corrupt(change: Callable[[dict[str, Any]], Any], event_type: str = "ImageSubmitted") -> str:
    detail = valid_detail(event_type=event_type)
    change(detail)
    return json.dumps(envelope(detail))


def set_pixel(value: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda d: d["data"]["pixels"].__setitem__(7, value)


CASES: list[tuple[str, str, str]] = [
    ("invalid JSON", "{not json", "body: not valid JSON"),
    ("JSON array, not an object", "[1, 2]", "body: not an EventBridge event"),
    ("no detail", json.dumps({"source": "x"}), "body: not an EventBridge event"),
    ("detail is a string", json.dumps(envelope("just text")), "detail: not valid JSON"),
    ("detail is a number", json.dumps(envelope(5) | {"detail": 5}), "event: expected a JSON object"),
    ("deeply nested JSON", '{"detail": ' + "[" * 100_000 + "]" * 100_000 + "}", "body: JSON nested too deeply"),
    ("unknown type", corrupt(lambda d: d.update(type="Teleported")), "type: unknown event type 'Teleported'"),
    ("another consumer's type", json.dumps(envelope(valid_detail() | {"type": "ImageClassified", "data": {}})), "data."),
    ("no id", corrupt(lambda d: d.pop("id")), "id: Field required"),
    ("empty id", corrupt(lambda d: d.update(id="")), "id: String should have at least 1 character"),
    ("id with spaces", corrupt(lambda d: d.update(id="has spaces")), "id: String should match pattern"),
    ("id over 128 chars", corrupt(lambda d: d.update(id="a" * 129)), "id: String should have at most 128"),
    ("no source", corrupt(lambda d: d.pop("source")), "source: Field required"),
    ("source over 256 chars", corrupt(lambda d: d.update(source="s" * 257)), "source: String should have at most 256"),
    ("lone surrogate in source (not UTF-8)", corrupt(lambda d: d.update(source="\ud800")), "body: not valid JSON (a lone surrogate in a string)"),
    ("no time", corrupt(lambda d: d.pop("time")), "time: Field required"),
    ("time without zone", corrupt(lambda d: d.update(time="2026-01-01T00:00:00")), "time: Input should have timezone info"),
    ("time not a date", corrupt(lambda d: d.update(time="yesterday")), "time: Input should be a valid datetime"),
    ("specversion 0.3", corrupt(lambda d: d.update(specversion="0.3")), "specversion: Input should be '1.0'"),
    ("no correlationid", corrupt(lambda d: d.pop("correlationid")), "correlationid: Field required"),
    ("extra envelope attribute", corrupt(lambda d: d.update(priority="high")), "priority: Extra inputs are not permitted"),
    ("wrong datacontenttype", corrupt(lambda d: d.update(datacontenttype="text/plain")), "datacontenttype: Input should be"),
    ("no data", corrupt(lambda d: d.pop("data")), "data: Field required"),
    ("data null", corrupt(lambda d: d.update(data=None)), "data: Input should be"),
    ("no pixels", corrupt(lambda d: d.update(data={})), "data.pixels: Field required"),
    ("pixels not a list", corrupt(lambda d: d["data"].update(pixels="0" * 64)), "data.pixels: Input should be a valid list"),
    ("empty pixels", corrupt(lambda d: d["data"].update(pixels=[])), "data.pixels: List should have at least 64 items"),
    ("63 pixels", corrupt(lambda d: d["data"].update(pixels=[1] * 63)), "data.pixels: List should have at least 64 items"),
    ("65 pixels", corrupt(lambda d: d["data"].update(pixels=[1] * 65)), "data.pixels: List should have at most 64 items"),
    ("100,000 pixels (an oversized event)", corrupt(lambda d: d["data"].update(pixels=[1] * 100_000)), "data.pixels: List should have at most 64"),
    ("nested pixel rows", corrupt(lambda d: d["data"].update(pixels=[[1] * 8] * 8)), "data.pixels.0: Input should be a valid integer"),
    ("pixel 17", corrupt(set_pixel(17)), "data.pixels.7: Input should be less than or equal to 16"),
    ("pixel -1", corrupt(set_pixel(-1)), "data.pixels.7: Input should be greater than or equal to 0"),
    ("pixel as a string", corrupt(set_pixel("7")), "data.pixels.7: Input should be a valid integer"),
    ("pixel 1.5", corrupt(set_pixel(1.5)), "data.pixels.7: Input should be a valid integer"),
    ("pixel true", corrupt(set_pixel(True)), "data.pixels.7: Input should be a valid integer"),
    ("pixel null", corrupt(set_pixel(None)), "data.pixels.7: Input should be a valid integer"),
    ("pixel NaN", corrupt(set_pixel(float("nan"))), "body: not valid JSON (NaN is not a JSON number)"),
    ("pixel Infinity", corrupt(set_pixel(float("inf"))), "body: not valid JSON (Infinity is not a JSON number)"),
    ("pixel 10^30", corrupt(set_pixel(10**30)), "data.pixels.7: Input should be less than or equal to 16"),
    ("extra data field", corrupt(lambda d: d["data"].update(label=3)), "data.label: Extra inputs are not permitted"),
    ("an integer of 5,000 digits", corrupt(set_pixel(12345)).replace("12345", "1" + "0" * 4999),
     "body: not valid JSON (a number too long to read"),
    ("a number too large for a float", corrupt(set_pixel(1.5)).replace("1.5", "1e400"), "body: not valid JSON (number 1e400"),
    ("duplicate key in the detail", corrupt(lambda d: None).replace('"correlationid": "catalogue"',
     '"correlationid": "catalogue", "correlationid": "other"'), "body: not valid JSON (duplicate key 'correlationid')"),
    ("no specversion", corrupt(lambda d: d.pop("specversion")), "specversion: Field required"),
    ("specversion as the number 1.0", corrupt(lambda d: d.update(specversion=1.0)), "specversion: Input should be '1.0'"),
    ("type with a zero-width space", corrupt(lambda d: d.update(type="Image\u200bSubmitted")), "type: unknown event type"),
    ("analysis 'Full'", corrupt(lambda d: d["data"].update(analysis="Full")), "data.analysis: Input should be 'classify'"),
    ("detail is an empty array", json.dumps(envelope([]) | {"detail": []}), "event: expected a JSON object"),
    ("detail is a JSON string of an array", json.dumps(envelope("[]")), "event: expected a JSON object"),
    ("Source forged against the envelope", json.dumps(envelope(valid_detail()) | {"source": "inferbus.image-classifier"}), "envelope mismatch"),
]


def text(change: Callable[[dict[str, Any]], Any]) -> str:
    return corrupt(change, "TextSubmitted")


def transaction(change: Callable[[dict[str, Any]], Any]) -> str:
    return corrupt(change, "TransactionSubmitted")


def set_feature(value: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda d: d["data"]["features"].__setitem__(4, value)


TRANSACTION_CASES: list[tuple[str, str, str]] = [
    ("no customer", transaction(lambda d: d["data"].pop("customer")), "data.customer: Field required"),
    ("unknown segment", transaction(lambda d: d["data"]["customer"].update(segment="vip")), "data.customer.segment: Input should be"),
    ("customer id with spaces", transaction(lambda d: d["data"]["customer"].update(id="a b")), "data.customer.id: String should match"),
    ("29 features", transaction(lambda d: d["data"].update(features=[1.0] * 29)), "data.features: List should have at least 30"),
    ("31 features", transaction(lambda d: d["data"].update(features=[1.0] * 31)), "data.features: List should have at most 30"),
    ("feature NaN", transaction(set_feature(float("nan"))), "body: not valid JSON (NaN is not a JSON number)"),
    ("feature Infinity", transaction(set_feature(float("-inf"))), "body: not valid JSON (-Infinity is not a JSON number)"),
    ("feature 10^30", transaction(set_feature(1e30)), "data.features.4: Input should be less than or equal to 1000000"),
    ("feature as a string", transaction(set_feature("12.5")), "data.features.4: Input should be a valid number"),
    ("feature true", transaction(set_feature(True)), "data.features.4: Input should be a valid number"),
    ("features as an object", transaction(lambda d: d["data"].update(features={"a": 1})), "data.features: Input should be a valid list"),
]

TEXT_CASES: list[tuple[str, str, str]] = [
    ("empty text", text(lambda d: d["data"].update(text="")), "data.text: String should have at least 1 character"),
    ("blank text", text(lambda d: d["data"].update(text=" \n\t ")), "data.text: Value error, text must not be blank"),
    ("text over 2,000 characters", text(lambda d: d["data"].update(text="x" * 2001)), "data.text: String should have at most 2000"),
    ("text as a number", text(lambda d: d["data"].update(text=42)), "data.text: Input should be a valid string"),
    ("text not UTF-8 (lone surrogate)", text(lambda d: d["data"].update(text="caf\udce9")), "body: not valid JSON (a lone surrogate in a string)"),
    ("no text", text(lambda d: d["data"].pop("text")), "data.text: Field required"),
    ("extra field beside the text", text(lambda d: d["data"].update(language="en")), "data.language: Extra inputs are not permitted"),
]

def scene(change: Callable[[dict[str, Any]], Any]) -> str:
    return corrupt(change, "SceneSubmitted")


SCENE_CASES: list[tuple[str, str, str]] = [
    ("scene a pixel short", scene(lambda d: d["data"].update(pixels=[1] * 255)),
     "data: Value error, pixels must hold width x height = 256 values, got 255"),
    ("scene pixel 255", scene(lambda d: d["data"]["pixels"].__setitem__(0, 255)), "data.pixels.0: Input should be less than or equal to 16"),
    ("scene width as a string", scene(lambda d: d["data"].update(width="16")), "data.width: Input should be a valid integer"),
    ("scene wider than 128", scene(lambda d: d["data"].update(width=256, pixels=[1] * 4096)),
     "data.width: Input should be less than or equal to 128"),
    ("scene without height", scene(lambda d: d["data"].pop("height")), "data.height: Field required"),
]
