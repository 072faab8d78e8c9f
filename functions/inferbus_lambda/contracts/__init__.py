"""Event contracts: the CloudEvents envelope (:mod:`.core`) and the data of each event type.

One module per domain: :mod:`.images`, :mod:`.text`, :mod:`.risk`, :mod:`.recommendations`. To add event types, add a
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
    PIXEL_MAX,
    ImageAnalysisFailed,
    ImageAnalyzed,
    ImageClassified,
    ImageSubmitted,
    ModelScore,
)
from .recommendations import MAX_RECOMMENDATIONS, Recommendation, Recommended
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
from .text import MAX_ENTITIES, TEXT_MAX_CHARS, Entity, Sentiment, TextAnalysisFailed, TextAnalyzed, TextSubmitted

__all__ = [
    "ApprovalFailed", "CAUSE_MAX_CHARS", "CloudEvent", "Customer", "DIGIT_CLASSES", "EVENT_DATA_MODELS", "Entity",
    "EventData", "FEATURE_LIMIT", "IDENTIFIER_PATTERN", "IMAGE_PIXELS", "Identifier", "MAX_RECOMMENDATIONS", "Recommendation", "Recommended", "ImageAnalysisFailed",
    "ImageAnalyzed", "ImageClassified", "ImageSubmitted", "InvalidEventError", "MAX_ENTITIES", "ModelRef", "ModelScore",
    "PIXEL_MAX", "Probability", "RISK_FEATURES", "ReviewCase", "ReviewCompleted", "ReviewFailed", "ReviewRequest",
    "RiskScored", "Sentiment", "ShortText", "TEXT_MAX_CHARS", "TextAnalysisFailed", "TextAnalyzed", "TextSubmitted",
    "TransactionApproved", "TransactionSubmitted", "WorkflowFailure", "check_distribution", "check_strict_json", "data_model",
    "envelope_model", "from_eventbridge_event", "from_put_events_entry", "is_identifier", "known_event_types",
    "loads_strict", "new_event", "parse_event", "to_put_events_entry",
]
