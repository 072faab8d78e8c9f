"""``TransactionSubmitted`` batches from SQS in, ``RiskScored`` events out: ONE ``session.run`` per batch.

The bus routes each ``RiskScored`` by its ``risk_score``: below the review threshold to
automatic approval, at or above it to the manual-review workflow. The risk is the
probability column the model's manifest entry names (``risk_column``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from inferbus_lambda.contracts import CloudEvent, RiskScored, TransactionSubmitted
from inferbus_lambda.handlers import ConsumerRuntime, consumer_handler


def score_transactions(events: Sequence[CloudEvent[TransactionSubmitted]], runtime: ConsumerRuntime) -> list[RiskScored]:
    """Score every transaction in ONE ``session.run``; one ``RiskScored`` per input, in order."""
    model = runtime.models.only
    risk_column = int(model.metadata["risk_column"])
    prediction = model.classify(np.array([event.data.features for event in events], dtype=np.float32))
    return [
        RiskScored(
            input_id=event.id,
            customer=event.data.customer,
            risk_score=round(float(probabilities[risk_column]), 6),
            model=model.ref,
            inference_ms=round(prediction.inference_ms, 3),
            batch_size=len(prediction),
        )
        for event, probabilities in zip(events, prediction.probabilities, strict=True)
    ]


lambda_handler = consumer_handler(score_transactions)
