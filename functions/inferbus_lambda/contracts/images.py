"""Images: 8x8 digits submitted for classification (batched consumer); scenes for analysis (vision workflow)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from .core import EventData, Identifier, ModelRef, Probability, ShortText, WorkflowFailure, check_distribution

__all__ = ["DIGIT_CLASSES", "IMAGE_PIXELS", "ImageAnalysisFailed", "ImageAnalyzed", "ImageClassified", "ImageSubmitted",
           "MAX_DETECTIONS", "PIXEL_MAX", "SCENE_MAX_SIDE", "SCENE_MIN_SIDE", "SceneSubmitted"]

IMAGE_PIXELS = 64
PIXEL_MAX = 16
DIGIT_CLASSES = 10
SCENE_MIN_SIDE, SCENE_MAX_SIDE = 8, 128  # 16,384 pixels at most: about 50 kB of JSON, a fifth of an event's 256 kB
MAX_DETECTIONS = 100


class ImageSubmitted(EventData):
    """An 8x8 greyscale image to classify: 64 integer pixels, 0-16, row by row.

    It goes to the batched SQS classifier. ``analysis`` may only say so (``classify``, the
    default); a scene to analyse in full (objects and label) is a ``SceneSubmitted``.
    """

    EVENT_TYPE: ClassVar[str] = "ImageSubmitted"
    pixels: Annotated[
        list[Annotated[int, Field(ge=0, le=PIXEL_MAX, strict=True)]],
        Field(min_length=IMAGE_PIXELS, max_length=IMAGE_PIXELS),
    ]
    analysis: Literal["classify"] = "classify"


DigitProbabilities = Annotated[list[Probability], Field(min_length=DIGIT_CLASSES, max_length=DIGIT_CLASSES)]


class ImageClassified(EventData):
    """The classification of one ``ImageSubmitted`` event."""

    EVENT_TYPE: ClassVar[str] = "ImageClassified"
    input_id: Identifier = Field(description="id of the ImageSubmitted event")
    label: Annotated[int, Field(ge=0, lt=DIGIT_CLASSES)]
    confidence: Probability
    probabilities: DigitProbabilities
    model: ModelRef
    inference_ms: Annotated[float, Field(ge=0.0, description="time of the batched session.run that scored this image")]
    batch_size: Annotated[int, Field(ge=1, description="images scored in that one session.run")]

    _sums_to_one = field_validator("probabilities")(check_distribution)


class SceneSubmitted(EventData):
    """A greyscale scene to analyse: ``width`` x ``height`` integer pixels, 0-16, row by row.

    The vision workflow finds the digits in it (boxes, classes, scores) and labels the whole
    scene, in parallel. A scene is 8-128 pixels on each side; an 8x8 digit for the batched
    classifier is an ``ImageSubmitted`` instead.
    """

    EVENT_TYPE: ClassVar[str] = "SceneSubmitted"
    width: Annotated[int, Field(ge=SCENE_MIN_SIDE, le=SCENE_MAX_SIDE, strict=True)]
    height: Annotated[int, Field(ge=SCENE_MIN_SIDE, le=SCENE_MAX_SIDE, strict=True)]
    pixels: Annotated[
        list[Annotated[int, Field(ge=0, le=PIXEL_MAX, strict=True)]],
        Field(min_length=SCENE_MIN_SIDE**2, max_length=SCENE_MAX_SIDE**2, description="width x height, row by row"),
    ]

    @model_validator(mode="after")
    def _pixels_fill_the_scene(self) -> SceneSubmitted:
        if len(self.pixels) != self.width * self.height:
            raise ValueError(f"pixels must hold width x height = {self.width * self.height} values, got {len(self.pixels)}")
        return self


Box = Annotated[list[Annotated[float, Field(ge=0.0, le=SCENE_MAX_SIDE)]], Field(min_length=4, max_length=4)]


class ImageAnalyzed(EventData):
    """The vision workflow's answer for one ``SceneSubmitted``: what is in it and what it is.

    ``boxes[i]``, ``classes[i]`` and ``scores[i]`` describe one object found, best score first
    (after non-maximum suppression); a box is ``[x0, y0, x1, y1]`` in pixels. ``scene`` is the
    scene classifier's label, one of its manifest ``labels``.
    """

    EVENT_TYPE: ClassVar[str] = "ImageAnalyzed"
    input_id: Identifier = Field(description="id of the SceneSubmitted event")
    boxes: Annotated[list[Box], Field(max_length=MAX_DETECTIONS)]
    classes: Annotated[list[Annotated[int, Field(ge=0, lt=DIGIT_CLASSES)]], Field(max_length=MAX_DETECTIONS)]
    scores: Annotated[list[Probability], Field(max_length=MAX_DETECTIONS)]
    scene: ShortText
    scene_confidence: Probability
    detector: ModelRef
    scene_classifier: ModelRef

    @model_validator(mode="after")
    def _one_row_per_object(self) -> ImageAnalyzed:
        if not len(self.boxes) == len(self.classes) == len(self.scores):
            raise ValueError(f"boxes, classes and scores must be as long as each other, got "
                             f"{len(self.boxes)}, {len(self.classes)} and {len(self.scores)}")
        for x0, y0, x1, y1 in self.boxes:
            if x1 < x0 or y1 < y0:
                raise ValueError(f"a box is [x0, y0, x1, y1] with x1 >= x0 and y1 >= y0, got {[x0, y0, x1, y1]}")
        return self


class ImageAnalysisFailed(WorkflowFailure):
    EVENT_TYPE: ClassVar[str] = "ImageAnalysisFailed"
