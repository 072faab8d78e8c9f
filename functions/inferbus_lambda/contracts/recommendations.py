"""Recommendations: the movies suggested to a customer whose transaction was approved."""

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from .core import EventData, Identifier, ModelRef
from .risk import Customer

__all__ = ["MAX_RECOMMENDATIONS", "Recommendation", "Recommended"]

MAX_RECOMMENDATIONS = 100


class Recommendation(BaseModel):
    """One suggested item and the model's score for it (higher first; comparable within one event only)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    item_id: Annotated[int, Field(ge=1, strict=True, description="MovieLens-100K item id")]
    score: float


class Recommended(EventData):
    """The recommendations for the customer of one ``TransactionApproved``, best first.

    ``basis`` says what they come from: ``history`` (the customer's own items, read from the
    state store), ``segment`` (popularity among customers of their age band and gender) or
    ``popularity`` (no profile found: popularity among all customers).
    """

    EVENT_TYPE: ClassVar[str] = "Recommended"
    input_id: Identifier = Field(description="id of the TransactionApproved event")
    customer: Customer
    items: Annotated[list[Recommendation], Field(min_length=1, max_length=MAX_RECOMMENDATIONS)]
    basis: Literal["history", "segment", "popularity"]
    model: ModelRef
    inference_ms: Annotated[float, Field(ge=0.0)]
    batch_size: Annotated[int, Field(ge=1)]
