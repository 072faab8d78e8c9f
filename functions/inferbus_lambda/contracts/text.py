"""Texts: submitted for analysis (sentiment and entities) by the text pipeline."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .core import EventData, Identifier, ModelRef, Probability, WorkflowFailure

__all__ = ["Entity", "MAX_ENTITIES", "Sentiment", "TEXT_MAX_CHARS", "TextAnalysisFailed", "TextAnalyzed", "TextSubmitted"]

TEXT_MAX_CHARS = 2000  # a few paragraphs; the encoder reads at most its max_tokens of them
MAX_ENTITIES = 100


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
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    label: Literal["negative", "positive"]
    confidence: Probability
    model: ModelRef


class Entity(BaseModel):
    """A span of the submitted text: ``text == submitted[start:end]``."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
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


class TextAnalysisFailed(WorkflowFailure):
    EVENT_TYPE: ClassVar[str] = "TextAnalysisFailed"
