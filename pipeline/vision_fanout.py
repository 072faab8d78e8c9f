"""The parallel pattern: SceneSubmitted -> object detection ‖ scene classification -> merge -> ImageAnalyzed."""

from inferbus.model.declarations import EventFilter, Task, Workflow
from inferbus.model.demo import Corruption, DemoInputs

from ._held_out import scenes

COMPONENTS = [
    Workflow(
        name="vision-fanout",
        description="SceneSubmitted -> detector (boxes) and scene classifier (label) in parallel -> ImageAnalyzed",
        definition="vision_fanout.asl.json",
        accepts=EventFilter("SceneSubmitted"),
        emits=("ImageAnalyzed",),
        failure="ImageAnalysisFailed",
        tasks={
            "Detect": Task("vision.detect.lambda_handler", models=("scene-detector",),
                           description="One scene -> boxes, classes, scores (NMS in numpy)"),
            "ClassifyScene": Task("vision.classify.lambda_handler", models=("scene-classifier",),
                                  description="One scene -> its label"),
            "Merge": Task("vision.merge.lambda_handler", description="Both branches -> one ImageAnalyzed"),
        },
    ),
]

DEMO = [
    DemoInputs(
        "vision-fanout",
        samples=scenes,
        count=16,
        limit=400,
        truth_field="scene",
        malformed=(
            Corruption("a pixel short of width x height", lambda d: d["data"].update(pixels=d["data"]["pixels"][:-1])),
            Corruption("pixel 17 > 16", lambda d: d["data"]["pixels"].__setitem__(0, 17)),
            Corruption("width 129 > 128", lambda d: d["data"].update(width=129)),
        ),
    ),
]
