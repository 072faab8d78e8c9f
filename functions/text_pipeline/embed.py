"""Step 2 of the text pipeline: token ids -> a 384-d sentence embedding (MiniLM, int8 ONNX).

This step can also run as a container-image Lambda (``Dockerfile`` beside it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from aws_lambda_powertools.metrics import MetricUnit

from inferbus_lambda.handlers import StepRuntime, step_handler
from inferbus_lambda.text import TextEncoder


def embed(event: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    input_ids = event["input_ids"]
    if not (isinstance(input_ids, list) and input_ids and all(isinstance(i, int) and i >= 0 for i in input_ids)):
        raise ValueError("input_ids must be a non-empty list of token ids")
    encoder = runtime.models.only
    embeddings = encoder.embed([input_ids])
    runtime.metrics.add_metric(name="InferenceMs", unit=MetricUnit.Milliseconds, value=embeddings.inference_ms)
    return {
        "embedding": np.round(embeddings.vectors[0].astype(np.float64), 6).tolist(),  # in numpy: a 384-number list
        "model": {"name": encoder.name, "version": encoder.version},
        "inference_ms": round(embeddings.inference_ms, 3),
    }


lambda_handler = step_handler(embed, load=TextEncoder.from_info)
