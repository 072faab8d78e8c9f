"""Step 3 of the text pipeline: sentence embedding -> sentiment (an ONNX head on the embedding).

The label names are the head's ``labels`` in the model manifest, in its output order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from inferbus_lambda.handlers import StepRuntime, step_handler


def classify(event: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    embedding = np.asarray(event["embedding"], dtype=np.float32)
    if embedding.ndim != 1 or not np.isfinite(embedding).all():
        raise ValueError(f"embedding must be one finite vector, got shape {embedding.shape}")
    head = runtime.models.only
    prediction = head.classify(embedding[np.newaxis, :])
    column = int(prediction.probabilities[0].argmax())  # the manifest's labels name the probability columns
    return {
        "label": head.labels[column],
        "confidence": round(float(prediction.probabilities[0][column]), 6),
        "model": {"name": head.name, "version": head.version},
    }


lambda_handler = step_handler(classify)
