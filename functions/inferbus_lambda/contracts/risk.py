"""Transactions: scored for risk, routed by the score to automatic approval or to a person."""

from typing import Annotated, ClassVar, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from .core import CAUSE_MAX_CHARS, EventData, Identifier, ModelRef, Probability, ShortText, WorkflowFailure

__all__ = ["ApprovalFailed", "Customer", "FEATURE_LIMIT", "RISK_FEATURES", "ReviewCase", "ReviewCompleted", "ReviewFailed",
           "ReviewRequest", "RiskScored", "TransactionApproved", "TransactionSubmitted"]

RISK_FEATURES = 30
FEATURE_LIMIT = 1e6  # larger magnitudes are input errors, not transactions


class Customer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
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


class ReviewFailed(WorkflowFailure):
    EVENT_TYPE: ClassVar[str] = "ReviewFailed"


class ApprovalFailed(WorkflowFailure):
    EVENT_TYPE: ClassVar[str] = "ApprovalFailed"


class ReviewCase(BaseModel):
    """What a reviewer sees of one high-risk transaction."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    transaction_id: Identifier
    correlationid: Identifier
    customer: Customer
    risk_score: Probability
    requested_at: AwareDatetime
    timeout_s: Annotated[int, Field(ge=1)]
    execution: Annotated[str, Field(min_length=1, max_length=2048)]


class ReviewRequest(BaseModel):
    """A message on the manual-review queue: the case and the token that resumes its workflow."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, populate_by_name=True)
    task_token: Annotated[str, Field(min_length=1, max_length=8192, alias="taskToken")]
    case: ReviewCase
