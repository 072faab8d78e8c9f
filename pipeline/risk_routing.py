"""The conditional pattern: each RiskScored goes, by its score, to automatic approval or to a person;
approved transactions are routed by customer segment to the offers queues of your services."""

from inferbus.model.declarations import EventFilter, Producer, Route, Setting, Workflow
from inferbus.model.demo import DemoReviewer


def play_reviewer(case: object, truth: object) -> tuple[bool, str | None]:
    """The demo's reviewer: approve what is truly not risky, reject the rest with a note."""
    approve = truth != "risky"
    return approve, None if approve else "risk confirmed"


SCORED = (Producer("risk-scorer"),)
APPROVERS = (Producer("auto-approve"), Producer("risk-review"))

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
    *(
        Route(
            name=f"{segment}-customer-offers",
            description=f"TransactionApproved for a {segment} customer -> {segment}-customer offers",
            accepts=EventFilter("TransactionApproved", sources=APPROVERS, data={"customer": {"segment": [segment]}}),
        )
        for segment in ("new", "returning")
    ),
]

# The demo plays the person of the manual review (risk-scorer's results reach the workflow through the bus).
DEMO = [DemoReviewer("risk-review", play_reviewer)]
