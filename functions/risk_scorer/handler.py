"""Lambda handler: ``TransactionSubmitted`` batches from SQS in, ``RiskScored`` events out.

The bus routes each ``RiskScored`` by its ``risk_score``: below the review threshold to
automatic approval, at or above it to the manual-review workflow.

Configuration (set by the CDK stack): ``EVENT_BUS_NAME``, ``INVALID_EVENTS_QUEUE_URL``, ``IDEMPOTENCY_TABLE_NAME``,
``IDEMPOTENCY_TTL_SECONDS``, ``MODEL_PATH``, ``MODEL_NAME``, ``MODEL_VERSION``,
``RISK_COLUMN`` (the probability column that is the risk), ``RESULT_SOURCE`` and the
``POWERTOOLS_*`` variables.
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
from inferbus_lambda.contracts import CloudEvent, ModelRef, RiskScored, TransactionSubmitted, to_put_events_entry
from inferbus_lambda.idempotency import claims_from_environment
from inferbus_lambda.inference import OnnxClassifier
from inferbus_lambda.publishing import PublishFailure, publish_events
from inferbus_lambda.rejections import Rejection, send_rejections

logger = Logger()
tracer = Tracer()
metrics = Metrics()

# Loaded once per container; every invocation reuses the session and the clients.
MODEL = OnnxClassifier.load(os.environ["MODEL_PATH"], name=os.environ["MODEL_NAME"], version=os.environ["MODEL_VERSION"])
RISK_COLUMN = int(os.environ["RISK_COLUMN"])
BUS_NAME = os.environ["EVENT_BUS_NAME"]
EVENTS = boto3.client("events")
SQS = boto3.client("sqs")
INVALID_EVENTS_QUEUE_URL = os.environ.get("INVALID_EVENTS_QUEUE_URL")


@tracer.capture_method
def score_transactions(events: Sequence[CloudEvent[TransactionSubmitted]]) -> list[RiskScored]:
    """Score every transaction in ONE ``session.run``; one ``RiskScored`` per input, in order."""
    prediction = MODEL.classify(np.array([event.data.features for event in events], dtype=np.float32))
    metrics.add_metric(name="InferenceMs", unit=MetricUnit.Milliseconds, value=prediction.inference_ms)
    model = ModelRef(name=MODEL.name, version=MODEL.version)
    return [
        RiskScored(
            input_id=event.id,
            customer=event.data.customer,
            risk_score=round(float(probabilities[RISK_COLUMN]), 6),
            model=model,
            inference_ms=round(prediction.inference_ms, 3),
            batch_size=len(prediction),
        )
        for event, probabilities in zip(events, prediction.probabilities, strict=True)
    ]


@tracer.capture_method
def publish_results(results: Sequence[CloudEvent[RiskScored]]) -> list[PublishFailure]:
    return publish_events(EVENTS, [to_put_events_entry(result, BUS_NAME) for result in results])


@tracer.capture_method
def reject_records(rejections: Sequence[Rejection]) -> set[str]:
    return send_rejections(SQS, INVALID_EVENTS_QUEUE_URL, os.environ["RESULT_SOURCE"], rejections)


CONSUMER = InferenceConsumer(
    parse=expect_type(TransactionSubmitted.EVENT_TYPE),
    infer=score_transactions,
    claims=claims_from_environment("risk_scorer"),
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
