"""Lambda handler: ``ImageSubmitted`` batches from SQS in, ``ImageClassified`` events out.

Configuration (set by the CDK stack): ``EVENT_BUS_NAME``, ``INVALID_EVENTS_QUEUE_URL``, ``IDEMPOTENCY_TABLE_NAME``,
``IDEMPOTENCY_TTL_SECONDS``, ``MODEL_PATH``, ``MODEL_NAME``, ``MODEL_VERSION``,
``RESULT_SOURCE`` and the ``POWERTOOLS_*`` variables.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import boto3
import numpy as np
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from inferbus_lambda.consumer import InferenceConsumer, expect_type
from inferbus_lambda.contracts import CloudEvent, ImageClassified, ImageSubmitted, ModelRef, to_put_events_entry
from inferbus_lambda.idempotency import claims_from_environment
from inferbus_lambda.inference import OnnxClassifier
from inferbus_lambda.publishing import PublishFailure, publish_events
from inferbus_lambda.rejections import Rejection, send_rejections

logger = Logger()
tracer = Tracer()
metrics = Metrics()

# Loaded once per container; every invocation reuses the session and the clients.
MODEL = OnnxClassifier.load(os.environ["MODEL_PATH"], name=os.environ["MODEL_NAME"], version=os.environ["MODEL_VERSION"])
BUS_NAME = os.environ["EVENT_BUS_NAME"]
EVENTS = boto3.client("events")
SQS = boto3.client("sqs")
INVALID_EVENTS_QUEUE_URL = os.environ.get("INVALID_EVENTS_QUEUE_URL")
CLAIMS = claims_from_environment("image_classifier")


@tracer.capture_method
def classify_images(events: Sequence[CloudEvent[ImageSubmitted]]) -> list[ImageClassified]:
    """Score every image in ONE ``session.run``; one ``ImageClassified`` per input, in order."""
    prediction = MODEL.classify(np.array([event.data.pixels for event in events], dtype=np.float32))
    metrics.add_metric(name="InferenceMs", unit=MetricUnit.Milliseconds, value=prediction.inference_ms)
    model = ModelRef(name=MODEL.name, version=MODEL.version)
    return [
        ImageClassified(
            input_id=event.id,
            label=int(label),
            confidence=float(probabilities.max()),
            probabilities=[round(float(p), 6) for p in probabilities],
            model=model,
            inference_ms=round(prediction.inference_ms, 3),
            batch_size=len(prediction),
        )
        for event, label, probabilities in zip(events, prediction.labels, prediction.probabilities, strict=True)
    ]


@tracer.capture_method
def publish_results(results: Sequence[CloudEvent[ImageClassified]]) -> list[PublishFailure]:
    return publish_events(EVENTS, [to_put_events_entry(result, BUS_NAME) for result in results])


@tracer.capture_method
def reject_records(rejections: Sequence[Rejection]) -> set[str]:
    return send_rejections(SQS, INVALID_EVENTS_QUEUE_URL, os.environ["RESULT_SOURCE"], rejections)


CONSUMER = InferenceConsumer(
    parse=expect_type(ImageSubmitted.EVENT_TYPE),
    infer=classify_images,
    claims=CLAIMS,
    publish=publish_results,
    result_source=os.environ["RESULT_SOURCE"],
    metrics=metrics,
    logger=logger,
    reject=reject_records if INVALID_EVENTS_QUEUE_URL else None,
)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return CONSUMER.handle(event, context)
