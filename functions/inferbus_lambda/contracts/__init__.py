"""Event contracts: the CloudEvents envelope (:mod:`.core`) and the data of each event type.

One module per domain: :mod:`.images`, :mod:`.text`, :mod:`.risk`. To add event types, add a
module here with :class:`EventData` subclasses (``inferbus new consumer`` writes one from your
model's inputs and outputs); defining the class registers the type, so the consumers, the
workflows' first step, the CLI and the tests all validate with it.
"""

from .core import (
    CAUSE_MAX_CHARS,
    EVENT_DATA_MODELS,
    IDENTIFIER_PATTERN,
    CloudEvent,
    EventData,
    Identifier,
    InvalidEventError,
    ModelRef,
    Probability,
    ShortText,
    WorkflowFailure,
    check_distribution,
    check_strict_json,
    data_model,
    envelope_model,
    from_eventbridge_event,
    from_put_events_entry,
    is_identifier,
    known_event_types,
    loads_strict,
    new_event,
    parse_event,
    to_put_events_entry,
)
from .images import (
    DIGIT_CLASSES,
    IMAGE_PIXELS,
    MAX_DETECTIONS,
    PIXEL_MAX,
    SCENE_MAX_SIDE,
    SCENE_MIN_SIDE,
    ImageAnalysisFailed,
    ImageAnalyzed,
    ImageClassified,
    ImageSubmitted,
    SceneSubmitted,
)
from .risk import (
    FEATURE_LIMIT,
    RISK_FEATURES,
    ApprovalFailed,
    Customer,
    ReviewCase,
    ReviewCompleted,
    ReviewFailed,
    ReviewRequest,
    RiskScored,
    TransactionApproved,
    TransactionSubmitted,
)
from .text import (
    ENTITY_TYPES,
    MAX_ENTITIES,
    TEXT_MAX_CHARS,
    UPOS_TAGS,
    Entity,
    Sentiment,
    TaggedWord,
    TextAnalysisFailed,
    TextAnalyzed,
    TextSubmitted,
)

__all__ = [
    "ApprovalFailed", "CAUSE_MAX_CHARS", "CloudEvent", "Customer", "DIGIT_CLASSES", "ENTITY_TYPES", "EVENT_DATA_MODELS", "Entity",
    "EventData", "FEATURE_LIMIT", "IDENTIFIER_PATTERN", "IMAGE_PIXELS", "Identifier", "ImageAnalysisFailed",
    "ImageAnalyzed", "ImageClassified", "ImageSubmitted", "InvalidEventError", "MAX_DETECTIONS", "MAX_ENTITIES", "ModelRef",
    "PIXEL_MAX", "Probability", "RISK_FEATURES", "SCENE_MAX_SIDE", "SCENE_MIN_SIDE", "SceneSubmitted", "ReviewCase", "ReviewCompleted", "ReviewFailed", "ReviewRequest",
    "RiskScored", "Sentiment", "ShortText", "TEXT_MAX_CHARS", "TaggedWord", "TextAnalysisFailed", "TextAnalyzed", "TextSubmitted",
    "TransactionApproved", "TransactionSubmitted", "UPOS_TAGS", "WorkflowFailure", "check_distribution", "check_strict_json", "data_model",
    "envelope_model", "from_eventbridge_event", "from_put_events_entry", "is_identifier", "known_event_types",
    "loads_strict", "new_event", "parse_event", "to_put_events_entry",
]
