"""The risk scorer: TransactionSubmitted -> risk model -> RiskScored; the bus routes the score on."""

from inferbus.model.declarations import Consumer, EventFilter
from inferbus.model.demo import Corruption, DemoInputs

from ._held_out import transactions

COMPONENTS = [
    Consumer(
        name="risk-scorer",
        description="TransactionSubmitted -> risk ONNX model -> RiskScored",
        handler="risk_scorer.handler.lambda_handler",
        accepts=EventFilter("TransactionSubmitted"),
        emits="RiskScored",
        models=("risk-logreg",),
    ),
]

DEMO = [
    DemoInputs(
        "risk-scorer",
        samples=transactions,
        count=40,
        limit=143,
        malformed=(
            Corruption("29 features", lambda d: d["data"].update(features=d["data"]["features"][:29])),
            Corruption("feature as a string", lambda d: d["data"]["features"].__setitem__(3, "12.5")),
        ),
    ),
]
