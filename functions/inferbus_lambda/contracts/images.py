"""Images: digits submitted for classification (batched consumer) or full analysis (vision workflow)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .core import EventData, Identifier, ModelRef, Probability, WorkflowFailure, check_distribution

__all__ = ["DIGIT_CLASSES", "IMAGE_PIXELS", "ImageAnalysisFailed", "ImageAnalyzed", "ImageClassified", "ImageSubmitted",
           "ModelScore", "PIXEL_MAX"]

IMAGE_PIXELS = 64
PIXEL_MAX = 16
DIGIT_CLASSES = 10


class ImageSubmitted(EventData):
    """An 8x8 greyscale image to classify: 64 integer pixels, 0-16, row by row.

    ``analysis`` chooses the path: ``classify`` (default) goes to the batched SQS
    classifier; ``full`` to the vision workflow, which runs two models in parallel.
    """

    EVENT_TYPE: ClassVar[str] = "ImageSubmitted"
    pixels: Annotated[
        list[Annotated[int, Field(ge=0, le=PIXEL_MAX, strict=True)]],
        Field(min_length=IMAGE_PIXELS, max_length=IMAGE_PIXELS),
    ]
    analysis: Literal["classify", "full"] = "classify"


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


class ModelScore(BaseModel):
    """One model's answer for one image: a branch of the vision workflow."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    model: ModelRef
    label: Annotated[int, Field(ge=0, lt=DIGIT_CLASSES)]
    confidence: Probability
    probabilities: DigitProbabilities
    inference_ms: Annotated[float, Field(ge=0.0)]

    _sums_to_one = field_validator("probabilities")(check_distribution)


class ImageAnalyzed(EventData):
    """The vision workflow's answer: every branch's score and their combination.

    ``probabilities`` is the mean of the branches' rows, ``label`` its argmax and
    ``confidence`` its value there, so two models that disagree lower the confidence.
    """

    EVENT_TYPE: ClassVar[str] = "ImageAnalyzed"
    input_id: Identifier = Field(description="id of the ImageSubmitted event")
    label: Annotated[int, Field(ge=0, lt=DIGIT_CLASSES)]
    confidence: Probability
    agreement: bool = Field(description="every branch chose the same label")
    probabilities: DigitProbabilities
    branches: Annotated[list[ModelScore], Field(min_length=2, max_length=8)]

    _sums_to_one = field_validator("probabilities")(check_distribution)


class ImageAnalysisFailed(WorkflowFailure):
    EVENT_TYPE: ClassVar[str] = "ImageAnalysisFailed"
