"""Event contracts: the CloudEvents envelope and the data of each event type.

On the bus an event is mapped as ``Source = source``, ``DetailType = type`` and
``Detail = the whole CloudEvent`` (``data`` inside), so a rule can match on any
attribute and a consumer gets the envelope back unchanged.

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

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = [
    "ApprovalFailed",
    "CloudEvent",
    "Customer",
    "EVENT_DATA_MODELS",
    "Entity",
    "EventData",
    "ImageAnalysisFailed",
    "ImageAnalyzed",
    "ImageClassified",
    "ImageSubmitted",
    "InvalidEventError",
    "ModelRef",
    "ModelScore",
    "ReviewCase",
    "ReviewCompleted",
    "ReviewFailed",
    "ReviewRequest",
    "RiskScored",
    "Sentiment",
    "TextAnalysisFailed",
    "TextAnalyzed",
    "TextSubmitted",
    "TransactionApproved",
    "TransactionSubmitted",
    "WorkflowFailure",
    "from_eventbridge_event",
    "from_put_events_entry",
    "new_event",
    "parse_event",
    "to_put_events_entry",
]

IMAGE_PIXELS = 64
PIXEL_MAX = 16
DIGIT_CLASSES = 10
TEXT_MAX_CHARS = 2000  # a few paragraphs; the encoder reads at most its max_tokens of them
MAX_ENTITIES = 100
RISK_FEATURES = 30
FEATURE_LIMIT = 1e6  # larger magnitudes are input errors, not transactions
CAUSE_MAX_CHARS = 32_768  # Step Functions' own limit on an error cause

ShortText = Annotated[str, Field(min_length=1, max_length=256)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
Identifier = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:/@#-]+$")]


class InvalidEventError(ValueError):
    """An event that does not meet its contract.

    Parameters
    ----------
    reason
        What is wrong, naming the field (``data.pixels.3: Input should be ...``).
    event_id
        The event's ``id`` when it could be read, else ``None``.
    """

    def __init__(self, reason: str, event_id: str | None = None) -> None:
        super().__init__(reason if event_id is None else f"event {event_id}: {reason}")
        self.reason = reason
        self.event_id = event_id


class EventData(BaseModel):
    """Base of every event's ``data``; ``EVENT_TYPE`` is the CloudEvents ``type``."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    EVENT_TYPE: ClassVar[str]


class ImageSubmitted(EventData):
    """An 8x8 greyscale image to classify: 64 integer pixels, 0-16, row by row.

    ``analysis`` chooses the path: ``classify`` (default) goes to the batched SQS
    classifier; ``full`` to the vision workflow, which runs two models in parallel.
    """

    EVENT_TYPE: ClassVar[str] = "ImageSubmitted"
    pixels: Annotated[
        list[Annotated[int, Field(ge=0, le=PIXEL_MAX, strict=True)]],
        Field(min_length=IMAGE_PIXELS, max_length=IMAGE_PIXELS),
    ]
    analysis: Literal["classify", "full"] = "classify"


class ModelRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: ShortText
    version: ShortText


def _check_distribution(value: list[float]) -> list[float]:
    if not math.isclose(sum(value), 1.0, abs_tol=1e-3):
        raise ValueError(f"probabilities must sum to 1, got {sum(value):.4f}")
    return value


DigitProbabilities = Annotated[list[Probability], Field(min_length=DIGIT_CLASSES, max_length=DIGIT_CLASSES)]


class ImageClassified(EventData):
    """The classification of one ``ImageSubmitted`` event."""

    EVENT_TYPE: ClassVar[str] = "ImageClassified"
    input_id: Identifier = Field(description="id of the ImageSubmitted event")
    label: Annotated[int, Field(ge=0, lt=DIGIT_CLASSES)]
    confidence: Probability
    probabilities: DigitProbabilities
    model: ModelRef
    inference_ms: Annotated[float, Field(ge=0.0, description="time of the batched session.run that scored this image")]
    batch_size: Annotated[int, Field(ge=1, description="images scored in that one session.run")]

    _sums_to_one = field_validator("probabilities")(_check_distribution)


class ModelScore(BaseModel):
    """One model's answer for one image: a branch of the vision workflow."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: ModelRef
    label: Annotated[int, Field(ge=0, lt=DIGIT_CLASSES)]
    confidence: Probability
    probabilities: DigitProbabilities
    inference_ms: Annotated[float, Field(ge=0.0)]

    _sums_to_one = field_validator("probabilities")(_check_distribution)


class ImageAnalyzed(EventData):
    """The vision workflow's answer: every branch's score and their combination.

    ``probabilities`` is the mean of the branches' rows, ``label`` its argmax and
    ``confidence`` its value there, so two models that disagree lower the confidence.
    """

    EVENT_TYPE: ClassVar[str] = "ImageAnalyzed"
    input_id: Identifier = Field(description="id of the ImageSubmitted event")
    label: Annotated[int, Field(ge=0, lt=DIGIT_CLASSES)]
    confidence: Probability
    agreement: bool = Field(description="every branch chose the same label")
    probabilities: DigitProbabilities
    branches: Annotated[list[ModelScore], Field(min_length=2, max_length=8)]

    _sums_to_one = field_validator("probabilities")(_check_distribution)


class TextSubmitted(EventData):
    """A text to analyse: sentiment and entities. 1-2,000 characters, not blank."""

    EVENT_TYPE: ClassVar[str] = "TextSubmitted"
    text: Annotated[str, Field(min_length=1, max_length=TEXT_MAX_CHARS)]

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text must not be blank")
        return value


class Sentiment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    label: Literal["negative", "positive"]
    confidence: Probability
    model: ModelRef


class Entity(BaseModel):
    """A span of the submitted text: ``text == submitted[start:end]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    text: Annotated[str, Field(min_length=1, max_length=TEXT_MAX_CHARS)]
    type: Literal["EMAIL", "URL", "MONEY", "PERCENT", "DATE", "TIME", "NAME"]
    start: Annotated[int, Field(ge=0, lt=TEXT_MAX_CHARS)]
    end: Annotated[int, Field(gt=0, le=TEXT_MAX_CHARS)]


class TextAnalyzed(EventData):
    """The text pipeline's answer for one ``TextSubmitted`` event."""

    EVENT_TYPE: ClassVar[str] = "TextAnalyzed"
    input_id: Identifier = Field(description="id of the TextSubmitted event")
    sentiment: Sentiment
    entities: Annotated[list[Entity], Field(max_length=MAX_ENTITIES)]
    tokens: Annotated[int, Field(ge=1, description="tokens the encoder read")]
    truncated: bool = Field(description="the text was longer than the encoder reads; the rest was not embedded")
    encoder: ModelRef


class Customer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: Identifier
    segment: Literal["new", "returning"]


Feature = Annotated[float, Field(strict=True, ge=-FEATURE_LIMIT, le=FEATURE_LIMIT)]


class TransactionSubmitted(EventData):
    """A transaction to score for risk: its customer and 30 numeric features.

    The shipped risk model is trained on a stand-in tabular dataset (see
    ``models/manifest.json``): the features are in that dataset's order.
    """

    EVENT_TYPE: ClassVar[str] = "TransactionSubmitted"
    customer: Customer
    features: Annotated[list[Feature], Field(min_length=RISK_FEATURES, max_length=RISK_FEATURES)]


class RiskScored(EventData):
    """The risk of one transaction; bus rules route it by ``risk_score``."""

    EVENT_TYPE: ClassVar[str] = "RiskScored"
    input_id: Identifier = Field(description="id of the TransactionSubmitted event")
    customer: Customer
    risk_score: Probability
    model: ModelRef
    inference_ms: Annotated[float, Field(ge=0.0)]
    batch_size: Annotated[int, Field(ge=1)]


class TransactionApproved(EventData):
    """A transaction let through: automatically (low risk) or by a reviewer."""

    EVENT_TYPE: ClassVar[str] = "TransactionApproved"
    input_id: Identifier = Field(description="id of the TransactionSubmitted event")
    customer: Customer
    risk_score: Probability
    decided_by: Literal["auto", "reviewer"]
    reviewer: ShortText | None = None


class ReviewCompleted(EventData):
    """A person's decision on a high-risk transaction.

    ``note`` is the reviewer's text; on a rejection it travels as the task failure's
    cause (which the local emulator drops, so locally it is ``None``).
    """

    EVENT_TYPE: ClassVar[str] = "ReviewCompleted"
    input_id: Identifier = Field(description="id of the TransactionSubmitted event")
    customer: Customer
    risk_score: Probability
    decision: Literal["approved", "rejected"]
    reviewer: ShortText | None = None
    note: Annotated[str, Field(max_length=CAUSE_MAX_CHARS)] | None = None


class WorkflowFailure(EventData):
    """Base of every workflow's failure event: which input, which error, which execution."""

    workflow: ShortText
    input_id: Identifier | None = Field(description="id of the input event; None if it could not be read")
    error: ShortText
    cause: Annotated[str, Field(max_length=CAUSE_MAX_CHARS)] | None = None
    execution: Annotated[str, Field(min_length=1, max_length=2048)]


class TextAnalysisFailed(WorkflowFailure):
    EVENT_TYPE: ClassVar[str] = "TextAnalysisFailed"


class ImageAnalysisFailed(WorkflowFailure):
    EVENT_TYPE: ClassVar[str] = "ImageAnalysisFailed"


class ReviewFailed(WorkflowFailure):
    EVENT_TYPE: ClassVar[str] = "ReviewFailed"


class ApprovalFailed(WorkflowFailure):
    EVENT_TYPE: ClassVar[str] = "ApprovalFailed"


class ReviewCase(BaseModel):
    """What a reviewer sees of one high-risk transaction."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    transaction_id: Identifier
    correlationid: Identifier
    customer: Customer
    risk_score: Probability
    requested_at: AwareDatetime
    timeout_s: Annotated[int, Field(ge=1)]
    execution: Annotated[str, Field(min_length=1, max_length=2048)]


class ReviewRequest(BaseModel):
    """A message on the manual-review queue: the case and the token that resumes its workflow."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    task_token: Annotated[str, Field(min_length=1, max_length=8192, alias="taskToken")]
    case: ReviewCase


EVENT_DATA_MODELS: dict[str, type[EventData]] = {
    model.EVENT_TYPE: model
    for model in (
        ImageSubmitted, ImageClassified, ImageAnalyzed, ImageAnalysisFailed,
        TextSubmitted, TextAnalyzed, TextAnalysisFailed,
        TransactionSubmitted, RiskScored, TransactionApproved, ReviewCompleted, ReviewFailed, ApprovalFailed,
    )
}

DataT = TypeVar("DataT", bound=EventData)


class CloudEvent(BaseModel, Generic[DataT]):
    """A CloudEvents 1.0 envelope (structured JSON mode) with inferbus's ``correlationid`` extension."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    specversion: Literal["1.0"] = "1.0"
    id: Identifier
    source: ShortText
    type: ShortText
    time: AwareDatetime
    subject: ShortText | None = None
    datacontenttype: Literal["application/json"] = "application/json"
    correlationid: Identifier = Field(description="follows one request through every stage")
    data: DataT


# Parametrizing a generic model is slow; do it once per event type, not once per record.
ENVELOPE_MODELS: dict[str, type[CloudEvent[Any]]] = {name: CloudEvent[model] for name, model in EVENT_DATA_MODELS.items()}  # type: ignore[valid-type]


def new_event(data: DataT, *, source: str, correlationid: str | None = None, subject: str | None = None) -> CloudEvent[DataT]:
    """Wrap ``data`` in a new envelope with a fresh id and the current time.

    ``correlationid`` defaults to the new event's own id (the start of a request).
    """
    event_id = str(uuid.uuid4())
    return ENVELOPE_MODELS[data.EVENT_TYPE](
        id=event_id,
        source=source,
        type=data.EVENT_TYPE,
        time=datetime.now(UTC),
        subject=subject,
        correlationid=correlationid or event_id,
        data=data,
    )


MAX_REASONS = 5  # a record with 64 bad pixels still gets a reason that fits a log line


def _describe(error: ValidationError) -> str:
    details = error.errors(include_url=False)
    parts = [f"{'.'.join(str(part) for part in d['loc']) or 'event'}: {d['msg']}" for d in details[:MAX_REASONS]]
    if len(details) > MAX_REASONS:
        parts.append(f"and {len(details) - MAX_REASONS} more")
    return "; ".join(parts)


def parse_event(envelope: Mapping[str, Any]) -> CloudEvent[EventData]:
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
    envelope_model = ENVELOPE_MODELS.get(event_type) if isinstance(event_type, str) else None
    if envelope_model is None:
        known = ", ".join(sorted(EVENT_DATA_MODELS))
        raise InvalidEventError(f"type: unknown event type {event_type!r} (known: {known})", event_id)
    try:
        return envelope_model.model_validate(envelope)
    except ValidationError as error:
        raise InvalidEventError(_describe(error), event_id) from None


def to_put_events_entry(event: CloudEvent[Any], bus_name: str) -> dict[str, Any]:
    """Map a CloudEvent to one ``PutEvents`` request entry."""
    return {
        "EventBusName": bus_name,
        "Source": event.source,
        "DetailType": event.type,
        "Time": event.time,
        "Detail": event.model_dump_json(exclude_none=True),
    }


def _load_json(text: str | bytes, what: str) -> Any:
    try:
        return json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidEventError(f"{what}: not valid JSON ({error})") from None
    except RecursionError:
        raise InvalidEventError(f"{what}: JSON nested too deeply to parse") from None


def _parse_detail(detail: Any, source: Any, detail_type: Any) -> CloudEvent[EventData]:
    if isinstance(detail, str | bytes):
        detail = _load_json(detail, "detail")
    event = parse_event(detail)
    # The bus routes on Source/DetailType: they must say what the envelope says.
    if source != event.source or detail_type != event.type:
        raise InvalidEventError(
            f"envelope mismatch: Source/DetailType {source!r}/{detail_type!r} "
            f"but the CloudEvent says {event.source!r}/{event.type!r}",
            event.id,
        )
    return event


def from_put_events_entry(entry: Mapping[str, Any]) -> CloudEvent[EventData]:
    """Inverse of :func:`to_put_events_entry`."""
    return _parse_detail(entry.get("Detail"), entry.get("Source"), entry.get("DetailType"))


def from_eventbridge_event(body: str | bytes | Mapping[str, Any]) -> CloudEvent[EventData]:
    """Read the CloudEvent out of the event EventBridge delivers to a target (an SQS body).

    Raises
    ------
    InvalidEventError
        If the body is not JSON, not an EventBridge event, or its detail breaks the contract.
    """
    if isinstance(body, str | bytes):
        body = _load_json(body, "body")
    if not isinstance(body, Mapping) or "detail" not in body:
        raise InvalidEventError("body: not an EventBridge event (no 'detail')")
    return _parse_detail(body["detail"], body.get("source"), body.get("detail-type"))
