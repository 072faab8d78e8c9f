"""A branch of the vision workflow: one image, one model. Deployed once per model.

Configuration: ``MODEL_PATH``, ``MODEL_NAME``, ``MODEL_VERSION``.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from inferbus_lambda.contracts import ImageSubmitted
from inferbus_lambda.faults import inject_invocation_faults
from inferbus_lambda.inference import OnnxClassifier

logger = Logger()
tracer = Tracer()
metrics = Metrics()
MODEL = OnnxClassifier.load(os.environ["MODEL_PATH"], name=os.environ["MODEL_NAME"], version=os.environ["MODEL_VERSION"])


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    inject_invocation_faults()
    pixels = ImageSubmitted(pixels=event["pixels"]).pixels
    prediction = MODEL.classify(np.array([pixels], dtype=np.float32))
    metrics.add_metric(name="InferenceMs", unit=MetricUnit.Milliseconds, value=prediction.inference_ms)
    probabilities = [round(float(p), 6) for p in prediction.probabilities[0]]
    label = int(prediction.labels[0])
    return {
        "model": {"name": MODEL.name, "version": MODEL.version},
        "label": label,
        "confidence": probabilities[label],
        "probabilities": probabilities,
        "inference_ms": round(prediction.inference_ms, 3),
    }
