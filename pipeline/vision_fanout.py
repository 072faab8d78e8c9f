"""The parallel pattern: ImageSubmitted (analysis=full) -> two models at once -> merge -> ImageAnalyzed."""

from functools import partial

from inferbus.model.declarations import EventFilter, Task, Workflow
from inferbus.model.demo import Corruption, DemoInputs

from ._held_out import digit_images

COMPONENTS = [
    Workflow(
        name="vision-fanout",
        description="ImageSubmitted (analysis=full) -> two models in parallel -> ImageAnalyzed",
        definition="vision_fanout.asl.json",
        accepts=EventFilter("ImageSubmitted", data={"analysis": ["full"]}),
        emits=("ImageAnalyzed",),
        failure="ImageAnalysisFailed",
        tasks={
            "ScoreMlp": Task("vision.score.lambda_handler", models=("digits-mlp",), description="One image, the digits MLP"),
            "ScoreSvc": Task("vision.score.lambda_handler", models=("digits-svc",), description="One image, the digits SVM"),
            "Merge": Task("vision.merge.lambda_handler", description="Branch scores -> combined confidence"),
        },
    ),
]

DEMO = [
    DemoInputs(
        "vision-fanout",
        # Held-out images the classifier's demo does not use.
        samples=partial(digit_images, offset=300, analysis="full"),
        count=16,
        limit=60,
        truth_field="label",
        malformed=(Corruption("65 pixels", lambda d: d["data"].update(pixels=d["data"]["pixels"] + [0])),),
    ),
]
