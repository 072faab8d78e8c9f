"""The kit's inference consumer on a Kafka batch (AWS's event shape), its claims and bus in memory.

Every result it publishes is logged (``published``, with the result's ``subject``: its input's
id) in the order PutEvents accepted it, and every record it refuses (``rejected``, with the
record's id and the reason): the ledger a test reads. The claims are one store for every
execution environment, as the claims table is.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from aws_lambda_powertools import Logger
from inferbus_lambda.claims import InMemoryClaimStore
from inferbus_lambda.consumer import InferenceConsumer, expect_type
from inferbus_lambda.contracts import ImageSubmitted
from inferbus_lambda.publishing import publish_events
from inferbus_lambda.rejections import Rejection
from inferbus_lambda.sources import KafkaRecordSource

from tests import runtime_fixtures
from tests.runtime_fixtures import LedgerBus, Metrics, log

# Not re-imported with the handler at a cold start: one store for every environment, as the table is.
CLAIMS = runtime_fixtures.__dict__.setdefault("KAFKA_CLAIMS", InMemoryClaimStore(scope="kafka", expires_after_seconds=60))


POISON = 16  # an image of this pixel value (the brightest) the model always refuses: its record can never succeed


def infer(events: list[Any]) -> list[Any]:
    return [RuntimeError("model refused the image") if event.data.pixels[0] == POISON
            else ImageSubmitted(pixels=event.data.pixels) for event in events]


def reject(rejections: list[Rejection]) -> set[str]:
    for rejection in rejections:
        log("rejected", record_id=rejection.message_id, error=rejection.error, reason=rejection.reason)
    return set()


runtime = SimpleNamespace(events=LedgerBus())  # fault injection wraps ``events``
runtime.consumer = InferenceConsumer(
    source=KafkaRecordSource(), parse=expect_type("ImageSubmitted"),
    infer=infer,
    claims=CLAIMS, publish=lambda entries: publish_events(runtime.events, entries, sleep=lambda _: None),
    result_source="inferbus.kafka", bus_name="bus", metrics=Metrics(), logger=Logger(service="kafka"), reject=reject)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    log("received", record_ids=[f"{r['topic']}-{r['partition']}-{r['offset']}"
                                for records in event["records"].values() for r in records],
        event_source=event["eventSource"])
    return runtime.consumer.handle(event, context)


handler.runtime = runtime  # type: ignore[attr-defined]
