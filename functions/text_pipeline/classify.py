"""Step 3 of the text pipeline: sentence embedding -> sentiment (an ONNX head on the embedding).

Configuration: ``MODEL_PATH``, ``MODEL_NAME``, ``MODEL_VERSION``, ``MODEL_LABELS`` (comma-separated,
in the model's output order).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from inferbus_lambda.faults import inject_invocation_faults
from inferbus_lambda.inference import OnnxClassifier

logger = Logger()
tracer = Tracer()
HEAD = OnnxClassifier.load(os.environ["MODEL_PATH"], name=os.environ["MODEL_NAME"], version=os.environ["MODEL_VERSION"])
LABELS = os.environ["MODEL_LABELS"].split(",")


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    inject_invocation_faults()
    embedding = np.asarray(event["embedding"], dtype=np.float32)
    if embedding.ndim != 1 or not np.isfinite(embedding).all():
        raise ValueError(f"embedding must be one finite vector, got shape {embedding.shape}")
    prediction = HEAD.classify(embedding[np.newaxis, :])
    label = int(prediction.labels[0])
    return {
        "label": LABELS[label],
        "confidence": round(float(prediction.probabilities[0][label]), 6),
        "model": {"name": HEAD.name, "version": HEAD.version},
    }
