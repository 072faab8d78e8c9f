"""The conditional pattern: each RiskScored goes, by its score, to automatic approval or to a person;
approved transactions go by customer segment to one of two recommenders, which read the customer's
profile from an external state store (the stateless consumer) and publish Recommended."""

from inferbus.model.declarations import Consumer, EventFilter, Producer, Setting, StateTable, Workflow
from inferbus.model.demo import DemoReviewer

from ._held_out import CUSTOMERS


def play_reviewer(case: object, truth: object) -> tuple[bool, str | None]:
    """The demo's reviewer: approve what is truly not risky, reject the rest with a note."""
    approve = truth != "risky"
    return approve, None if approve else "risk confirmed"


SCORED = (Producer("risk-scorer"),)
APPROVERS = (Producer("auto-approve"), Producer("risk-review"))
# Age, gender and (returning customers) the movies seen; the demo's profiles are seeded from the build's file.
PROFILES = StateTable("customer-profiles", seed=CUSTOMERS)

COMPONENTS = [
    Workflow(
        name="auto-approve",
        description="RiskScored below the review threshold -> TransactionApproved",
        definition="auto_approve.asl.json",
        accepts=EventFilter("RiskScored", sources=SCORED,
                            data={"risk_score": [{"numeric": ["<", Setting("review_threshold")]}]}),
        emits=("TransactionApproved",),
        failure="ApprovalFailed",
    ),
    Workflow(
        name="risk-review",
        description="RiskScored at or above the review threshold -> manual review (task token) -> ReviewCompleted",
        definition="risk_review.asl.json",
        accepts=EventFilter("RiskScored", sources=SCORED,
                            data={"risk_score": [{"numeric": [">=", Setting("review_threshold")]}]}),
        emits=("ReviewCompleted", "TransactionApproved"),
        failure="ReviewFailed",
        express=False,  # a person may take days: Standard, with a task token
        review_queue="review",
        substitutions={"ReviewTimeoutSeconds": Setting("review_timeout_s")},
    ),
    Consumer(
        name="returning-customer-recommender",
        description="TransactionApproved for a returning customer -> history (state table) -> EASE ONNX -> Recommended",
        handler="returning_customer_recommender.handler.lambda_handler",
        accepts=EventFilter("TransactionApproved", sources=APPROVERS, data={"customer": {"segment": ["returning"]}}),
        emits="Recommended",
        models=("recs-ease",),
        reads=(PROFILES,),
    ),
    Consumer(
        name="new-customer-recommender",
        description="TransactionApproved for a new customer -> age and gender (state table) -> segment popularity ONNX "
                    "-> Recommended",
        handler="new_customer_recommender.handler.lambda_handler",
        accepts=EventFilter("TransactionApproved", sources=APPROVERS, data={"customer": {"segment": ["new"]}}),
        emits="Recommended",
        models=("recs-popular",),
        reads=(PROFILES,),
    ),
]

# The demo plays the person of the manual review (risk-scorer's results reach the workflow through the bus).
DEMO = [DemoReviewer("risk-review", play_reviewer)]
