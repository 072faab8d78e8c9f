"""Step 2 of the text pipeline: token ids -> a 384-d sentence embedding (MiniLM, int8 ONNX).

This step can also run as a container-image Lambda (``Dockerfile`` beside it).
Configuration: ``MODEL_PATH``, ``MODEL_NAME``, ``MODEL_VERSION``.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from inferbus_lambda.faults import inject_invocation_faults
from inferbus_lambda.text import TextEncoder

logger = Logger()
tracer = Tracer()
metrics = Metrics()
ENCODER = TextEncoder.load(os.environ["MODEL_PATH"], name=os.environ["MODEL_NAME"], version=os.environ["MODEL_VERSION"])


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    inject_invocation_faults()
    input_ids = event["input_ids"]
    if not (isinstance(input_ids, list) and input_ids and all(isinstance(i, int) and i >= 0 for i in input_ids)):
        raise ValueError("input_ids must be a non-empty list of token ids")
    embeddings = ENCODER.embed([input_ids])
    metrics.add_metric(name="InferenceMs", unit=MetricUnit.Milliseconds, value=embeddings.inference_ms)
    return {
        "embedding": [round(float(value), 6) for value in embeddings.vectors[0]],
        "model": {"name": ENCODER.name, "version": ENCODER.version},
        "inference_ms": round(embeddings.inference_ms, 3),
    }
