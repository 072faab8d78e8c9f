"""The CloudEvents envelope, the registry of event types, and the mapping to and from EventBridge.

On the bus an event is mapped as ``Source = source``, ``DetailType = type`` and
``Detail = the whole CloudEvent`` (``data`` inside), so a rule can match on any
attribute and a consumer gets the envelope back unchanged.

Every subclass of :class:`EventData` that sets ``EVENT_TYPE`` registers itself: that is all it
takes to add an event type. Envelope models are built per type on first use (building one
is slow, and a function needs only the two or three it reads and writes).

Example
-------
>>> from inferbus_lambda.contracts import ImageSubmitted, from_put_events_entry, new_event, to_put_events_entry
>>> event = new_event(ImageSubmitted(pixels=[0] * 64), source="inferbus.cli", correlationid="req-1")
>>> entry = to_put_events_entry(event, bus_name="inferbus")
>>> entry["DetailType"], entry["Source"]
('ImageSubmitted', 'inferbus.cli')
>>> from_put_events_entry(entry).data == event.data
True
"""

# No ``from __future__ import annotations`` in the contract modules: pydantic would then compile and
# evaluate each field's annotation from its text, about a third of what defining the models costs a
# cold init (bench/speed.py --cold); a name used before it is defined is quoted instead.

import functools
import importlib
import json
import math
import pkgutil
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from ..errors import InvalidEventError

__all__ = [
    "CAUSE_MAX_CHARS",
    "CloudEvent",
    "EVENT_DATA_MODELS",
    "EventData",
    "IDENTIFIER_PATTERN",
    "Identifier",
    "InvalidEventError",
    "ModelRef",
    "Probability",
    "ShortText",
    "WorkflowFailure",
    "is_identifier",
    "result_event_id",
    "check_distribution",
    "check_strict_json",
    "loads_strict",
    "data_model",
    "envelope_model",
    "from_eventbridge_event",
    "from_put_events_entry",
    "known_event_types",
    "new_event",
    "parse_event",
    "to_put_events_entry",
    "xray_trace_header",
]

CAUSE_MAX_CHARS = 32_768  # Step Functions' own limit on an error cause
IDENTIFIER_PATTERN = r"^[A-Za-z0-9._:/@#-]+$"  # event ids and correlation ids ...
IDENTIFIER_MAX_CHARS = 128  # ... of 1 to 128 of these characters

# The CloudEvents distributed tracing extension (https://github.com/cloudevents/spec/blob/main/cloudevents/extensions/distributed-tracing.md):
# W3C Trace Context's traceparent (version 00: trace id, parent span id, flags) and tracestate.
TRACEPARENT_PATTERN = r"^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"
TRACESTATE_MAX_CHARS = 512  # W3C Trace Context: a vendor may drop a longer tracestate; we refuse it

ShortText = Annotated[str, Field(min_length=1, max_length=256)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
Identifier = Annotated[str, Field(min_length=1, max_length=IDENTIFIER_MAX_CHARS, pattern=IDENTIFIER_PATTERN)]
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)


def is_identifier(value: Any) -> bool:
    """Whether ``value`` is a valid event or correlation id.

    >>> is_identifier("req-42"), is_identifier("a b"), is_identifier("x" * 129)
    (True, False, False)
    """
    return isinstance(value, str) and 0 < len(value) <= IDENTIFIER_MAX_CHARS and bool(_IDENTIFIER.match(value))


# Every registered event type: EVENT_TYPE -> its data model (see EventData).
EVENT_DATA_MODELS: dict[str, type["EventData"]] = {}


class EventData(BaseModel):
    """Base of every event's ``data``; ``EVENT_TYPE`` is the CloudEvents ``type``.

    Subclassing registers the type, so :func:`parse_event` and the tools know it.
    """

    # defer_build (on every contract model): a model's validator is built on its first use, not at
    # import, so a function's cold init does not pay for the contracts it never validates.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)
    EVENT_TYPE: ClassVar[str]
    # Top-level fields that say how an answer was computed, not what it is: an input scored again
    # (a redelivery after a crash) repeats its result, same id, with other timings. Two events with
    # one id are compared without them, so that repeat is a duplicate downstream, not a conflict.
    MEASUREMENTS: ClassVar[frozenset[str]] = frozenset({"inference_ms", "batch_size"})

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        event_type = cls.__dict__.get("EVENT_TYPE")
        if event_type is None:
            return  # an abstract base, such as WorkflowFailure
        known = EVENT_DATA_MODELS.get(event_type)
        if known is not None and known.__qualname__ != cls.__qualname__:
            raise TypeError(f"event type {event_type!r} is defined twice: {known.__module__}.{known.__qualname__} "
                            f"and {cls.__module__}.{cls.__qualname__}")
        EVENT_DATA_MODELS[event_type] = cls


def check_distribution(value: list[float]) -> list[float]:
    """A field validator: the probabilities of one prediction sum to 1."""
    if not math.isclose(sum(value), 1.0, abs_tol=1e-3):
        raise ValueError(f"probabilities must sum to 1, got {sum(value):.4f}")
    return value


class ModelRef(BaseModel):
    """Which model answered: its name and version in ``models/manifest.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    name: ShortText
    version: ShortText


class WorkflowFailure(EventData):
    """Base of every workflow's failure event: which input, which error, which execution."""

    workflow: ShortText
    input_id: Identifier | None = Field(description="id of the input event; None if it could not be read")
    error: ShortText
    cause: Annotated[str, Field(max_length=CAUSE_MAX_CHARS)] | None = None
    execution: Annotated[str, Field(min_length=1, max_length=2048)]


DataT = TypeVar("DataT", bound=EventData)


class CloudEvent(BaseModel, Generic[DataT]):
    """A CloudEvents 1.0 envelope (structured JSON mode) with inferbus's ``correlationid`` extension."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    # Required, as the bus rules require it: an event without it is refused on every path.
    specversion: Literal["1.0"]
    id: Identifier
    source: ShortText
    type: ShortText
    time: AwareDatetime
    subject: ShortText | None = None
    datacontenttype: Literal["application/json"] = "application/json"
    correlationid: Identifier = Field(description="follows one request through every stage")
    traceparent: Annotated[str, Field(pattern=TRACEPARENT_PATTERN)] | None = Field(
        default=None, description="W3C trace context of the request that made it (distributed tracing extension)")
    tracestate: Annotated[str, Field(min_length=1, max_length=TRACESTATE_MAX_CHARS)] | None = None
    data: DataT


def known_event_types() -> list[str]:
    """Every event type, after importing every module of this package (yours included)."""
    package = importlib.import_module(__package__)
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{__package__}.{module.name}")
    return sorted(EVENT_DATA_MODELS)


def data_model(event_type: str) -> type[EventData] | None:
    """The data model of ``event_type``, or ``None`` if no contract module defines it."""
    if event_type not in EVENT_DATA_MODELS:
        known_event_types()  # a type of a contract module nothing has imported yet
    return EVENT_DATA_MODELS.get(event_type)


def result_event_id(input_id: str, producer: str, *, input_source: str | None) -> str:
    """A result's id is derived from its input's identity (its source and id, as CloudEvents has it), so a
    republished result is recognisably the same event, and inputs with one id from two sources get two."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "inferbus:" + json.dumps([producer, input_source, input_id])))


@functools.cache
def envelope_model(event_type: str) -> "type[CloudEvent[Any]]":
    """The envelope model of ``event_type``, built once (parametrizing a generic model is slow).

    Raises
    ------
    KeyError
        For a type no contract module defines.
    """
    model = data_model(event_type)
    if model is None:
        raise KeyError(event_type)
    return CloudEvent[model]  # type: ignore[valid-type]


def new_event(data: DataT, *, source: str, correlationid: str | None = None, subject: str | None = None,
              event_id: str | None = None) -> "CloudEvent[DataT]":
    """Wrap ``data`` in a new envelope with the current time and ``event_id`` (default: a fresh id).

    ``correlationid`` defaults to the new event's own id (the start of a request).
    """
    event_id = event_id or str(uuid.uuid4())
    return envelope_model(data.EVENT_TYPE)(
        specversion="1.0",
        id=event_id,
        source=source,
        type=data.EVENT_TYPE,
        time=datetime.now(UTC),
        subject=subject,
        correlationid=correlationid or event_id,
        data=data,
    )


MAX_REASONS = 5  # a record with 64 bad pixels still gets a reason that fits a log line


def describe(error: ValidationError) -> str:
    """A validation error as one line: each violated field and why, at most five of them."""
    details = error.errors(include_url=False)
    parts = [f"{'.'.join(str(part) for part in d['loc']) or 'event'}: {d['msg']}" for d in details[:MAX_REASONS]]
    if len(details) > MAX_REASONS:
        parts.append(f"and {len(details) - MAX_REASONS} more")
    return "; ".join(parts)


def parse_event(envelope: Mapping[str, Any]) -> "CloudEvent[EventData]":
    """Validate a CloudEvent given as a mapping; the ``type`` chooses the data model.

    Raises
    ------
    InvalidEventError
        With every violated field named, or the unknown ``type``.
    """
    if not isinstance(envelope, Mapping):
        raise InvalidEventError(f"event: expected a JSON object, got {type(envelope).__name__}")
    raw_id = envelope.get("id")
    event_id = raw_id if isinstance(raw_id, str) else None
    event_type = envelope.get("type")
    if not isinstance(event_type, str) or data_model(event_type) is None:
        known = ", ".join(sorted(EVENT_DATA_MODELS))  # only on the way out: every valid event passes here
        if "type" not in envelope:
            raise InvalidEventError(f"type: Field required (a CloudEvent's type, one of: {known})", event_id)
        raise InvalidEventError(f"type: unknown event type {event_type!r} (known: {known})", event_id)
    try:
        return envelope_model(event_type).model_validate(envelope)
    except ValidationError as error:
        raise InvalidEventError(describe(error), event_id) from None


def to_put_events_entry(event: "CloudEvent[Any]", bus_name: str) -> dict[str, Any]:
    """Map a CloudEvent to one ``PutEvents`` request entry (its ``traceparent`` as the entry's X-Ray ``TraceHeader``)."""
    entry = {
        "EventBusName": bus_name,
        "Source": event.source,
        "DetailType": event.type,
        "Time": event.time,
        "Detail": event.model_dump_json(exclude_none=True),
    }
    if event.traceparent is not None:
        entry["TraceHeader"] = xray_trace_header(event.traceparent)
    return entry


def xray_trace_header(traceparent: str) -> str:
    """A W3C ``traceparent`` as the X-Ray trace header EventBridge carries (``TraceHeader``).

    An X-Ray trace id is ``1-`` + 8 hex digits + ``-`` + 24 hex digits
    (https://docs.aws.amazon.com/xray/latest/devguide/xray-api-sendingdata.html#xray-api-traceids): the
    32 hex digits of a W3C trace id, split as OpenTelemetry's X-Ray propagator splits them. The parent
    span id is ``Parent``, the sampled flag ``Sampled``.

    >>> xray_trace_header("00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01")
    'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1'
    """
    _, trace_id, parent, flags = traceparent.split("-")
    return f"Root=1-{trace_id[:8]}-{trace_id[8:]};Parent={parent};Sampled={int(flags, 16) & 1}"


# Strict JSON, one definition for every path: what json.loads would let through silently
# (a repeated key, NaN, a lone surrogate, a number too big for a float) is refused with a reason.
NOT_JSON = "not valid JSON"
_NUMBERS = frozenset({int, float, bool})


class _Refused(Exception):
    """Raised inside the decoder's hooks; becomes an InvalidEventError naming the reader's ``what``."""


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise _Refused(f"duplicate key {repeated[:64]!r}")
    return found


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Refused(f"number {text[:32]} is too large for a float")
    return value


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_strict_json(value: Any, what: str = "event") -> None:
    """Refuse, in an already parsed value, what strict JSON refuses: NaN and infinities, lone surrogates.

    For values that arrive parsed (a workflow's input); text goes through :func:`loads_strict`,
    which also refuses repeated keys (a parsed value no longer shows them).

    Raises
    ------
    InvalidEventError
        ``<what>: not valid JSON (...)``.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if type(item) is list and item and (kinds := set(map(type, item))) <= _NUMBERS:
            # A list of numbers (an image's pixels, an embedding): its types in one pass in C, not one item at a time.
            if float in kinds and not all(math.isfinite(x) for x in item if type(x) is float):
                bad = next(x for x in reversed(item) if type(x) is float and not math.isfinite(x))
                raise InvalidEventError(f"{what}: {NOT_JSON} ({bad} is not a JSON number)")
        elif isinstance(item, str):
            if _has_lone_surrogate(item):
                raise InvalidEventError(f"{what}: {NOT_JSON} (a lone surrogate in a string)")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidEventError(f"{what}: {NOT_JSON} ({item} is not a JSON number)")
        elif isinstance(item, Mapping):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)


def loads_strict(text: str | bytes, what: str = "body") -> Any:
    """Parse JSON text strictly: repeated keys, NaN/Infinity, lone surrogates, non-UTF-8 bytes,
    numbers out of range and nesting too deep to read are refused, each with its reason.

    >>> loads_strict('{"id": "a", "id": "b"}')
    Traceback (most recent call last):
    ...
    inferbus_lambda.errors.InvalidEventError: body: not valid JSON (duplicate key 'id')

    Raises
    ------
    InvalidEventError
        ``<what>: not valid JSON (...)`` or ``<what>: JSON nested too deeply to parse``.
    """
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        elif _has_lone_surrogate(text):
            raise _Refused("a lone surrogate, not UTF-8")
        value = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant,
                           parse_float=_finite_float)
    except _Refused as refused:
        raise InvalidEventError(f"{what}: {NOT_JSON} ({refused})") from None
    except UnicodeDecodeError:
        raise InvalidEventError(f"{what}: {NOT_JSON} (bytes that are not UTF-8)") from None
    except json.JSONDecodeError as error:
        raise InvalidEventError(f"{what}: {NOT_JSON} ({error})") from None
    except RecursionError:
        raise InvalidEventError(f"{what}: JSON nested too deeply to parse") from None
    except ValueError as error:  # an integer longer than Python reads (sys.get_int_max_str_digits)
        raise InvalidEventError(f"{what}: {NOT_JSON} (a number too long to read: {str(error)[:80]})") from None
    if "\\u" in text:  # an escaped lone surrogate decodes without error: look only when escapes exist
        check_strict_json(value, what)
    return value


def _parse_detail(detail: Any, source: Any, detail_type: Any) -> "CloudEvent[EventData]":
    if isinstance(detail, str | bytes):
        detail = loads_strict(detail, "detail")
    event = parse_event(detail)
    # The bus routes on Source/DetailType: they must say what the envelope says.
    if source != event.source or detail_type != event.type:
        raise InvalidEventError(
            f"envelope mismatch: Source/DetailType {source!r}/{detail_type!r} "
            f"but the CloudEvent says {event.source!r}/{event.type!r}",
            event.id,
        )
    return event


def _readable_id(body: Any) -> str | None:
    """The event id of a refused body, if a lenient reading finds one: the operator sees which event it was."""
    try:
        if isinstance(body, str | bytes):
            body = json.loads(body)
        detail = body.get("detail") if isinstance(body, Mapping) else None
        if isinstance(detail, str):
            detail = json.loads(detail)
        event_id = detail.get("id") if isinstance(detail, Mapping) else None
    except (ValueError, RecursionError):
        return None
    return event_id if is_identifier(event_id) else None


def from_put_events_entry(entry: Mapping[str, Any]) -> "CloudEvent[EventData]":
    """Inverse of :func:`to_put_events_entry`."""
    return _parse_detail(entry.get("Detail"), entry.get("Source"), entry.get("DetailType"))


def from_eventbridge_event(body: str | bytes | Mapping[str, Any]) -> "CloudEvent[EventData]":
    """Read the CloudEvent out of the event EventBridge delivers to a target (an SQS body).

    Raises
    ------
    InvalidEventError
        If the body is not JSON, not an EventBridge event, or its detail breaks the contract.
    """
    try:
        if isinstance(body, str | bytes):
            body = loads_strict(body, "body")
        else:
            check_strict_json(body, "body")
    except InvalidEventError as refused:
        raise InvalidEventError(refused.reason, _readable_id(body)) from None
    if not isinstance(body, Mapping) or "detail" not in body:
        raise InvalidEventError("body: not an EventBridge event (no 'detail')")
    return _parse_detail(body["detail"], body.get("source"), body.get("detail-type"))
