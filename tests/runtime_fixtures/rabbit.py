"""The kit's inference consumer on Amazon MQ (RabbitMQ) batches: its claims in the template's DynamoDB
table (one store for every execution environment), its rejections and dead letters to the template's queues.

Every result it publishes is logged (``published``, with the result's ``subject``: its input's id)
once PutEvents accepted it: the ledger a test counts. Each invocation logs the records it received.
"""

from __future__ import annotations

import os
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from inferbus_lambda.claims import DynamoDBClaimStore
from inferbus_lambda.consumer import InferenceConsumer, expect_type
from inferbus_lambda.contracts import ImageSubmitted, from_put_events_entry
from inferbus_lambda.publishing import publish_events
from inferbus_lambda.rejections import send_rejections
from inferbus_lambda.sources import AmazonMqRecordSource

from tests.runtime_fixtures import Metrics, log

SERVICE = "inferbus.rabbit"


class LedgerBus:
    """PutEvents that accepts every entry and writes its result's subject in the ledger."""

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: N803 - boto3's name
        for entry in Entries:
            log("published", subject=from_put_events_entry(entry).subject)
        return {"FailedEntryCount": 0, "Entries": [{"EventId": str(i)} for i, _ in enumerate(Entries)]}


class Runtime:
    events = LedgerBus()  # fault injection wraps ``events``


runtime = Runtime()
runtime.consumer = InferenceConsumer(  # type: ignore[attr-defined]
    source=AmazonMqRecordSource(consumer=SERVICE, dead_letter_queue_url=os.environ.get("DEAD_LETTER_QUEUE_URL"),
                                max_receive_count=int(os.environ.get("MAX_RECEIVE_COUNT", "0")) or None,
                                sqs=lambda: boto3.client("sqs")),
    parse=expect_type("ImageSubmitted"),
    infer=lambda events: [ImageSubmitted(pixels=event.data.pixels) if event.data.pixels[0] != 13
                          else ValueError("pixel 13: the model refuses it") for event in events],
    claims=DynamoDBClaimStore(os.environ["IDEMPOTENCY_TABLE_NAME"], scope=os.environ["POWERTOOLS_SERVICE_NAME"],
                              expires_after_seconds=int(os.environ["IDEMPOTENCY_TTL_SECONDS"]),
                              client=boto3.client("dynamodb")),
    publish=lambda entries: publish_events(runtime.events, entries, sleep=lambda _: None),
    reject=lambda rejections: send_rejections(boto3.client("sqs"), os.environ["INVALID_EVENTS_QUEUE_URL"], SERVICE,
                                              rejections),
    result_source=SERVICE, bus_name="bus", metrics=Metrics(), logger=Logger(service="rabbit"))


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    log("received", records=sum(len(messages) for messages in event["rmqMessagesByQueue"].values()),
        event_source=event["eventSource"])
    return runtime.consumer.handle(event, context)


handler.runtime = runtime  # type: ignore[attr-defined]
