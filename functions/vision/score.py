"""A branch of the vision workflow: one image, one model. Deployed once per model (``INFERBUS_MODELS``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from aws_lambda_powertools.metrics import MetricUnit

from inferbus_lambda.contracts import ImageSubmitted
from inferbus_lambda.handlers import StepRuntime, step_handler


def score(event: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    pixels = ImageSubmitted(pixels=event["pixels"]).pixels
    model = runtime.models.only
    prediction = model.classify(np.array([pixels], dtype=np.float32))
    runtime.metrics.add_metric(name="InferenceMs", unit=MetricUnit.Milliseconds, value=prediction.inference_ms)
    probabilities = [round(float(p), 6) for p in prediction.probabilities[0]]
    label = int(prediction.labels[0])
    return {
        "model": {"name": model.name, "version": model.version},
        "label": label,
        "confidence": probabilities[label],
        "probabilities": probabilities,
        "inference_ms": round(prediction.inference_ms, 3),
    }


lambda_handler = step_handler(score)
