"""A branch of the vision workflow: the scene's label, one of the scene classifier's manifest ``labels``."""

from __future__ import annotations

from typing import Any

import numpy as np
from aws_lambda_powertools.metrics import MetricUnit

from inferbus_lambda.contracts import SceneSubmitted
from inferbus_lambda.handlers import StepRuntime, step_handler


def classify_scene(event: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    scene = SceneSubmitted.model_validate(event["scene"])
    model = runtime.models.only
    prediction = model.classify(np.array(scene.pixels, dtype=np.float32).reshape(1, scene.height, scene.width))
    runtime.metrics.add_metric(name="InferenceMs", unit=MetricUnit.Milliseconds, value=prediction.inference_ms)
    column = int(prediction.probabilities[0].argmax())
    return {
        "scene": str(model.labels[column]),
        "scene_confidence": round(float(prediction.probabilities[0][column]), 6),
        "scene_classifier": {"name": model.name, "version": model.version},
    }


lambda_handler = step_handler(classify_scene)
