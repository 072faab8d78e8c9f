"""The kit's inference consumer on an SQS (FIFO) batch: its claims in the template's DynamoDB table (shared by
the function's execution environments, so a duplicate is recognised in whichever it lands), its bus in memory.

Every result it publishes is logged (``published``, with the result's ``subject``: its input's
id) in the order PutEvents accepted it: the ledger a test reads to check the order of a group.
With ``DEAD_LETTER_QUEUE_URL`` and ``MAX_RECEIVE_COUNT`` set, it dead-letters records failing on their
last receive itself, as the kit's consumers do.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from inferbus_lambda.claims import DynamoDBClaimStore
from inferbus_lambda.consumer import InferenceConsumer, expect_type
from inferbus_lambda.contracts import ImageSubmitted
from inferbus_lambda.publishing import publish_events
from inferbus_lambda.sources import SqsRecordSource

from tests.runtime_fixtures import LedgerBus, Metrics, log


runtime = SimpleNamespace(events=LedgerBus())  # fault injection wraps ``events``
runtime.consumer = InferenceConsumer(
    source=SqsRecordSource(consumer="inferbus.ordered", dead_letter_queue_url=os.environ.get("DEAD_LETTER_QUEUE_URL"),
                           max_receive_count=int(os.environ.get("MAX_RECEIVE_COUNT", "0")) or None,
                           sqs=lambda: boto3.client("sqs")), parse=expect_type("ImageSubmitted"),
    infer=lambda events: [ImageSubmitted(pixels=event.data.pixels) for event in events],
    claims=DynamoDBClaimStore(os.environ["IDEMPOTENCY_TABLE_NAME"], scope="ordered", expires_after_seconds=60,
                              client=boto3.client("dynamodb")),
    publish=lambda entries: publish_events(runtime.events, entries, sleep=lambda _: None),
    result_source="inferbus.ordered", bus_name="bus", metrics=Metrics(), logger=Logger(service="ordered"))


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    log("received", message_ids=[record["messageId"] for record in event["Records"]])
    return runtime.consumer.handle(event, context)


handler.runtime = runtime  # type: ignore[attr-defined]
