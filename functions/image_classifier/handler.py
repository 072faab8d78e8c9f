"""``ImageSubmitted`` batches from SQS in, ``ImageClassified`` events out: ONE ``session.run`` per batch.

The kit does the rest (:func:`inferbus_lambda.handlers.consumer_handler`); the declaration is
``pipeline/image_classifier.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from inferbus_lambda.contracts import CloudEvent, ImageClassified, ImageSubmitted
from inferbus_lambda.handlers import ConsumerRuntime, consumer_handler


def classify_images(events: Sequence[CloudEvent[ImageSubmitted]], runtime: ConsumerRuntime) -> list[ImageClassified]:
    """Score every image in ONE ``session.run``; one ``ImageClassified`` per input, in order."""
    model = runtime.models.only
    prediction = model.classify(np.array([event.data.pixels for event in events], dtype=np.float32))
    return [
        ImageClassified(
            input_id=event.id,
            label=int(label),
            confidence=float(probabilities.max()),
            probabilities=[round(float(p), 6) for p in probabilities],
            model=model.ref,
            inference_ms=round(prediction.inference_ms, 3),
            batch_size=len(prediction),
        )
        for event, label, probabilities in zip(events, prediction.labels, prediction.probabilities, strict=True)
    ]


lambda_handler = consumer_handler(classify_images)
