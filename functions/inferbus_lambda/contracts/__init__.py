"""Event contracts: the CloudEvents envelope (:mod:`.core`) and the data of each event type.

One module per domain: :mod:`.images`, :mod:`.text`, :mod:`.risk`, :mod:`.recommendations`. To add event types, add a
module here with :class:`EventData` subclasses (``inferbus new consumer`` writes one from your
model's inputs and outputs); defining the class registers the type, so the consumers, the
workflows' first step, the CLI and the tests all validate with it.
"""

from typing import TYPE_CHECKING

from ..lazy import import_on_first_use
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

if TYPE_CHECKING:  # for type checkers; at run time each domain is imported on first use (:func:`__getattr__`)
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

# Which module defines each name of a domain: a function imports only the domains it names (each
# domain's models cost its cold init their class creation), e.g. a text step never builds ImageSubmitted.
_DOMAIN_OF = {
    name: module
    for module, names in {
        "images": ("DIGIT_CLASSES", "IMAGE_PIXELS", "PIXEL_MAX", "ImageAnalysisFailed", "ImageAnalyzed",
                   "ImageClassified", "ImageSubmitted", "MAX_DETECTIONS", "SCENE_MAX_SIDE", "SCENE_MIN_SIDE", "SceneSubmitted"),
        "recommendations": ("MAX_RECOMMENDATIONS", "Recommendation", "Recommended"),
        "risk": ("FEATURE_LIMIT", "RISK_FEATURES", "ApprovalFailed", "Customer", "ReviewCase", "ReviewCompleted",
                 "ReviewFailed", "ReviewRequest", "RiskScored", "TransactionApproved", "TransactionSubmitted"),
        "text": ("ENTITY_TYPES", "MAX_ENTITIES", "TEXT_MAX_CHARS", "UPOS_TAGS", "Entity", "Sentiment", "TaggedWord",
                 "TextAnalysisFailed", "TextAnalyzed", "TextSubmitted"),
    }.items()
    for name in names
}


__getattr__ = import_on_first_use(__name__, _DOMAIN_OF, globals())  # a domain's name, its module imported on first use


__all__ = [
    "CAUSE_MAX_CHARS",
    "DIGIT_CLASSES",
    "ENTITY_TYPES",
    "EVENT_DATA_MODELS",
    "FEATURE_LIMIT",
    "IDENTIFIER_PATTERN",
    "IMAGE_PIXELS",
    "MAX_DETECTIONS",
    "MAX_ENTITIES",
    "MAX_RECOMMENDATIONS",
    "PIXEL_MAX",
    "RISK_FEATURES",
    "SCENE_MAX_SIDE",
    "SCENE_MIN_SIDE",
    "TEXT_MAX_CHARS",
    "UPOS_TAGS",
    "ApprovalFailed",
    "CloudEvent",
    "Customer",
    "Entity",
    "EventData",
    "Identifier",
    "ImageAnalysisFailed",
    "ImageAnalyzed",
    "ImageClassified",
    "ImageSubmitted",
    "InvalidEventError",
    "ModelRef",
    "Probability",
    "Recommendation",
    "Recommended",
    "ReviewCase",
    "ReviewCompleted",
    "ReviewFailed",
    "ReviewRequest",
    "RiskScored",
    "SceneSubmitted",
    "Sentiment",
    "ShortText",
    "TaggedWord",
    "TextAnalysisFailed",
    "TextAnalyzed",
    "TextSubmitted",
    "TransactionApproved",
    "TransactionSubmitted",
    "WorkflowFailure",
    "check_distribution",
    "check_strict_json",
    "data_model",
    "envelope_model",
    "from_eventbridge_event",
    "from_put_events_entry",
    "is_identifier",
    "known_event_types",
    "loads_strict",
    "new_event",
    "parse_event",
    "to_put_events_entry",
]
