"""The conditional pattern: each RiskScored goes, by its score, to automatic approval or to a person;
approved transactions are routed by customer segment to the offers queues of your services."""

from infra.declarations import EventFilter, Producer, Route, Setting, Workflow


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
        trigger=EventFilter("RiskScored", sources=SCORED,
                            data={"risk_score": [{"numeric": ["<", Setting("review_threshold")]}]}),
        produces=("TransactionApproved",),
        failure="ApprovalFailed",
    ),
    Workflow(
        name="risk-review",
        description="RiskScored at or above the review threshold -> manual review (task token) -> ReviewCompleted",
        definition="risk_review.asl.json",
        trigger=EventFilter("RiskScored", sources=SCORED,
                            data={"risk_score": [{"numeric": [">=", Setting("review_threshold")]}]}),
        produces=("ReviewCompleted", "TransactionApproved"),
        failure="ReviewFailed",
        express=False,  # a person may take days: Standard, with a task token
        review_queue="review",
        reviewer=play_reviewer,
        substitutions={"ReviewTimeoutSeconds": Setting("review_timeout_s")},
    ),
    *(
        Route(
            name=f"{segment}-customer-offers",
            description=f"TransactionApproved for a {segment} customer -> {segment}-customer offers",
            routes=EventFilter("TransactionApproved", sources=APPROVERS, data={"customer": {"segment": [segment]}}),
        )
        for segment in ("new", "returning")
    ),
]
