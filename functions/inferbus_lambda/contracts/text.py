"""Texts: submitted for analysis (sentiment and entities) by the text pipeline."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .core import EventData, Identifier, ModelRef, Probability, WorkflowFailure

__all__ = ["ENTITY_TYPES", "Entity", "MAX_ENTITIES", "Sentiment", "TEXT_MAX_CHARS", "TaggedWord", "TextAnalysisFailed",
           "TextAnalyzed", "TextSubmitted", "UPOS_TAGS"]

TEXT_MAX_CHARS = 2000  # a few paragraphs; the encoder reads at most its max_tokens of them
MAX_ENTITIES = 100
# Universal Dependencies' 17 part-of-speech tags (https://universaldependencies.org/u/pos/).
UPOS_TAGS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT",
             "SCONJ", "SYM", "VERB", "X")
# PER/ORG/LOC: the trained recogniser (Universal NER's types); the rest: documented patterns
# (inferbus_lambda.entities). NAME is what the patterns called a capitalised run before a model did.
ENTITY_TYPES = ("PER", "ORG", "LOC", "EMAIL", "URL", "MONEY", "PERCENT", "DATE", "TIME", "NAME")


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
    type: Literal[ENTITY_TYPES]  # type: ignore[valid-type]
    start: Annotated[int, Field(ge=0, lt=TEXT_MAX_CHARS)]
    end: Annotated[int, Field(gt=0, le=TEXT_MAX_CHARS)]


class TaggedWord(BaseModel):
    """A word of the submitted text (``text == submitted[start:end]``) with its part of speech and
    its entity tag (BIO: ``B-PER`` begins a person, ``I-PER`` continues one, ``O`` is outside)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    text: Annotated[str, Field(min_length=1, max_length=TEXT_MAX_CHARS)]
    start: Annotated[int, Field(ge=0, lt=TEXT_MAX_CHARS)]
    end: Annotated[int, Field(gt=0, le=TEXT_MAX_CHARS)]
    upos: Literal[UPOS_TAGS]  # type: ignore[valid-type]
    ner: Annotated[str, Field(pattern=r"^(O|[BI]-(PER|ORG|LOC))$")]


class TextAnalyzed(EventData):
    """The text pipeline's answer for one ``TextSubmitted`` event."""

    EVENT_TYPE: ClassVar[str] = "TextAnalyzed"
    input_id: Identifier = Field(description="id of the TextSubmitted event")
    sentiment: Sentiment
    entities: Annotated[list[Entity], Field(max_length=MAX_ENTITIES)]
    words: Annotated[list[TaggedWord], Field(max_length=TEXT_MAX_CHARS,
                                             description="the text's words with their part-of-speech and entity tags")]
    tagger: ModelRef = Field(description="the part-of-speech tagger")
    recogniser: ModelRef = Field(description="the named-entity recogniser")
    tokens: Annotated[int, Field(ge=1, description="tokens the encoder read")]
    truncated: bool = Field(description="the text was longer than the encoder reads; the rest was not embedded")
    encoder: ModelRef


class TextAnalysisFailed(WorkflowFailure):
    EVENT_TYPE: ClassVar[str] = "TextAnalysisFailed"
