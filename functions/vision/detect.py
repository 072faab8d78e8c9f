"""A branch of the vision workflow: the objects in a scene, as boxes, classes and scores.

The detector graph gives a candidate box per grid cell; non-maximum suppression runs here, in numpy
(:mod:`inferbus_lambda.detection`), with the thresholds of the model's manifest entry (``detection``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from aws_lambda_powertools.metrics import MetricUnit

from inferbus_lambda.contracts import MAX_DETECTIONS, SceneSubmitted
from inferbus_lambda.detection import detect
from inferbus_lambda.handlers import StepRuntime, step_handler


def detect_objects(event: dict[str, Any], runtime: StepRuntime) -> dict[str, Any]:
    scene = SceneSubmitted.model_validate(event["scene"])
    model = runtime.models.only
    pixels = np.array(scene.pixels, dtype=np.float32).reshape(1, scene.height, scene.width)
    batch = model.run({"pixels": pixels})
    runtime.metrics.add_metric(name="InferenceMs", unit=MetricUnit.Milliseconds, value=batch.inference_ms)
    settings = model.metadata.get("detection", {})
    found = detect(batch["boxes"], batch["scores"], batch["classes"], max_detections=MAX_DETECTIONS,
                   iou_threshold=settings.get("iou_threshold", 0.5), score_threshold=settings.get("score_threshold", 0.3))[0]
    # A box may reach past the canvas (a box is decoded from its cell's centre): clipped to the scene.
    boxes = np.clip(found.boxes, 0, [scene.width, scene.height, scene.width, scene.height])
    return {
        "boxes": [[round(float(v), 2) for v in box] for box in boxes],
        "classes": [int(model.labels[int(c)]) if model.labels else int(c) for c in found.classes],
        "scores": [round(float(s), 6) for s in found.scores],
        "detector": {"name": model.name, "version": model.version},
    }


lambda_handler = step_handler(detect_objects)
