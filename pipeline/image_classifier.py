"""The batched image classifier: ImageSubmitted -> digits MLP -> ImageClassified, ONE inference per SQS batch."""

from inferbus.model.declarations import Consumer, EventFilter
from inferbus.model.demo import Corruption, DemoInputs
from inferbus.model.settings import ConsumerSettings

from ._held_out import digit_images

COMPONENTS = [
    Consumer(
        name="image-classifier",
        description="ImageSubmitted -> digits ONNX model -> ImageClassified",
        handler="image_classifier.handler.lambda_handler",
        # Images that ask for the full analysis go to the vision workflow instead.
        accepts=EventFilter("ImageSubmitted", data={"$or": [{"analysis": [{"exists": False}]}, {"analysis": ["classify"]}]}),
        emits="ImageClassified",
        models=("digits-mlp",),
        settings=ConsumerSettings(batch_size=100, max_batching_window_s=1, max_concurrency=10),
    ),
]

DEMO = [
    DemoInputs(
        "image-classifier",
        samples=digit_images,
        count=200,
        limit=300,
        duplicates=5,
        truth_field="label",
        malformed=(
            Corruption("63 pixels", lambda d: d["data"].update(pixels=d["data"]["pixels"][:63])),
            Corruption("pixel 17 > 16", lambda d: d["data"]["pixels"].__setitem__(5, 17)),
            Corruption("pixel as a string", lambda d: d["data"]["pixels"].__setitem__(0, "7")),
            Corruption("extra data field", lambda d: d["data"].update(label=3)),
            Corruption("no correlationid", lambda d: d.pop("correlationid")),
            Corruption("time without zone", lambda d: d.update(time="2026-01-01T00:00:00")),
        ),
    ),
]
