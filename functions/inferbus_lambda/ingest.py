"""The HTTP ingest endpoint's logic: a CloudEvent over HTTP in, validated, one PutEvents entry out.

Both CloudEvents HTTP content modes are read:

- **structured**: ``Content-Type: application/cloudevents+json``, the body is the whole CloudEvent;
- **binary**: the attributes are ``ce-*`` headers (``ce-specversion``, ``ce-id``, ``ce-source``,
  ``ce-type``, ``ce-time``, ``ce-correlationid``, ...), the body is ``data`` as JSON
  (``Content-Type: application/json``).

``time`` defaults to the moment of receipt and ``correlationid`` to the event's ``id`` (the
start of a request), as :func:`~.contracts.core.new_event` does; everything else is the contract's.
The CloudEvents distributed tracing extension is carried: ``traceparent`` and ``tracestate``
attributes (in binary mode ``ce-traceparent``; or the request's own W3C ``traceparent`` /
``tracestate`` headers, which the HTTP binding of that extension uses) stay on the event and
become the bus entry's X-Ray ``TraceHeader``.

Refused, each with a 4xx and its reason: a body that is not UTF-8, empty, not JSON, nested too
deeply, with a number JSON cannot carry, or (structured mode) not an object; a ``charset`` other
than UTF-8; an event over 256 KB (one PutEvents entry's limit); and a ``source`` that inferbus's
own producers reserve, however it is cased (``Inferbus.Risk-Scorer`` is refused too: the check
is this endpoint's own rule, and a look-alike source is a forgery to whoever reads it).

Example
-------
>>> envelope = read_cloudevent({"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": "t-1",
...                             "ce-source": "my.app", "ce-type": "TextSubmitted"}, b'{"text": "Hello"}')
>>> event = validate(envelope, reserved_sources=("inferbus.text-pipeline",))
>>> event.id, event.correlationid, event.data.text
('t-1', 't-1', 'Hello')
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any

from .contracts.core import CloudEvent, EventData, loads_strict, parse_event
from .errors import InvalidEventError
from .publishing import MAX_REQUEST_BYTES

__all__ = ["BINARY_PREFIX", "IngestRefusal", "MAX_EVENT_BYTES", "STRUCTURED", "read_cloudevent", "request_body",
           "validate"]

STRUCTURED = "application/cloudevents+json"
BATCH = "application/cloudevents-batch+json"
JSON = "application/json"
BINARY_PREFIX = "ce-"
MAX_EVENT_BYTES = MAX_REQUEST_BYTES  # one PutEvents entry
TRACE_CONTEXT = ("traceparent", "tracestate")  # W3C Trace Context headers: the tracing extension's HTTP binding


class IngestRefusal(Exception):
    """Why a request is refused, as the HTTP answer says it.

    Parameters
    ----------
    status
        400 (breaks its contract), 403 (a reserved source), 413 (too large), 415 (not a CloudEvent).
    error, reason
        A short name and what to fix.
    """

    def __init__(self, status: int, error: str, reason: str) -> None:
        super().__init__(f"{status} {error}: {reason}")
        self.status = status
        self.error = error
        self.reason = reason

    def as_body(self) -> dict[str, str]:
        return {"error": self.error, "reason": self.reason}


def _json(body: bytes, what: str) -> Any:
    """``body`` read as strict JSON, as every other path reads it (repeated keys, NaN refused)."""
    try:
        return loads_strict(body, what)
    except InvalidEventError as error:
        raise IngestRefusal(400, InvalidEventError.__name__, error.reason) from None


def request_body(body: str | None, *, base64_encoded: bool) -> bytes:
    """The request's body as the caller sent it, bytes (a function URL base64-encodes a binary body).

    Raises
    ------
    IngestRefusal
        400 for a body marked base64 that is not.
    """
    if not body:
        return b""
    if not base64_encoded:
        return body.encode("utf-8", "surrogatepass")
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise IngestRefusal(400, InvalidEventError.__name__, "body: marked base64 but is not base64") from None


def read_cloudevent(headers: Mapping[str, str], body: bytes | str | None, *, now: datetime | None = None) -> dict[str, Any]:
    """The CloudEvent a request carries, as a mapping (not validated yet).

    Raises
    ------
    IngestRefusal
        413 for a body over :data:`MAX_EVENT_BYTES`, 415 for a request in neither content mode
        or in a charset other than UTF-8, 400 for a body that is empty or not JSON (not UTF-8,
        too deep, a number out of range: the reason says which).
    """
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else (body or b"")
    if len(raw) > MAX_EVENT_BYTES:
        raise IngestRefusal(413, "EventTooLarge", f"the body is {len(raw):,} bytes; an event may have {MAX_EVENT_BYTES:,}")
    lowered = {key.lower(): value for key, value in headers.items()}
    media_type, *parameters = lowered.get("content-type", "").split(";")
    content_type = media_type.strip().lower()
    charset = next((value.strip().strip('"').lower() for name, _, value in (p.partition("=") for p in parameters)
                    if name.strip().lower() == "charset"), "utf-8")
    if charset not in ("utf-8", "utf8"):
        raise IngestRefusal(415, "UnsupportedContentType", f"charset {charset!r}: JSON is UTF-8; send it as UTF-8")
    if not raw and (content_type == STRUCTURED or f"{BINARY_PREFIX}specversion" in lowered):
        raise IngestRefusal(400, InvalidEventError.__name__, "the body is empty: send the event (structured) or its data")
    if content_type == BATCH:
        raise IngestRefusal(415, "UnsupportedContentType", "batched mode is not taken: send one event per request")
    if content_type == STRUCTURED:
        envelope = _json(raw, "body")
        if not isinstance(envelope, dict):
            raise IngestRefusal(400, InvalidEventError.__name__, "body: a structured CloudEvent is a JSON object")
    elif f"{BINARY_PREFIX}specversion" in lowered:
        if content_type not in (JSON, ""):
            raise IngestRefusal(415, "UnsupportedContentType", f"binary mode takes data as {JSON}, not {content_type!r}")
        envelope = {key[len(BINARY_PREFIX):]: value for key, value in lowered.items() if key.startswith(BINARY_PREFIX)}
        envelope["data"] = _json(raw, "data")
        envelope["datacontenttype"] = JSON
    else:
        raise IngestRefusal(415, "UnsupportedContentType",
                            f"send a CloudEvent: structured (Content-Type: {STRUCTURED}, the event as the body) or binary "
                            f"(ce-specversion, ce-id, ce-source, ce-type headers; Content-Type: {JSON}, data as the body)")
    for name in TRACE_CONTEXT:  # the request's own trace context, unless the event carries one
        if name in lowered and name not in envelope:
            envelope[name] = lowered[name]
    envelope.setdefault("time", (now or datetime.now(UTC)).isoformat())
    if isinstance(envelope.get("id"), str):
        envelope.setdefault("correlationid", envelope["id"])
    return envelope


def validate(envelope: Mapping[str, Any], *, reserved_sources: Collection[str]) -> CloudEvent[EventData]:
    """The event, validated against its type's contract.

    Raises
    ------
    IngestRefusal
        400 with every violated field named, or 403 for a source inferbus's producers reserve
        (compared without case).
    """
    # Who may send comes before what was sent: a reserved source is a 403 whatever its data holds.
    _refuse_reserved(envelope.get("source"), reserved_sources)
    try:
        event = parse_event(envelope)
    except InvalidEventError as error:
        raise IngestRefusal(400, InvalidEventError.__name__, str(error)) from None
    _refuse_reserved(event.source, reserved_sources)
    return event


def _refuse_reserved(source: Any, reserved_sources: Collection[str]) -> None:
    if isinstance(source, str) and source.casefold() in {reserved.casefold() for reserved in reserved_sources}:
        raise IngestRefusal(403, "ReservedSource", f"source {source!r} is reserved to an inferbus producer; use your own")
