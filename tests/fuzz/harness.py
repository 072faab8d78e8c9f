"""The real consumer and Accept step, with their AWS calls in memory: fast enough to fuzz.

A consumer is built by its handler module exactly as in Lambda (``consumer_handler``, its models
loaded from ``models/``); only its claims (an in-memory store), its EventBridge client and its rejections are replaced
by in-memory ones that record what happened. The state tables it declares it reads (``reads``) are
provisioned as the embedded runtime does: one per declaration, named to it in ``INFERBUS_STATE_TABLES``
and filled with its seed by the kit's own seeding, here in an in-memory DynamoDB. What runs is the kit's batch pipeline: parse,
validate, claim, ONE inference, results published through the kit's own publisher (request
planning, retries), rejections, the partial batch response.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inferbus_lambda.claims import InMemoryClaimStore
from inferbus_lambda.contracts import CloudEvent, InvalidEventError, from_eventbridge_event, from_put_events_entry

from inferbus.local import HOST
from inferbus.model.declarations import Consumer
from inferbus.state_seed import REPO_ROOT, seed_tables


@dataclass
class Outcomes:
    """What one batch did: results published (by input id), rejections kept (by message id)."""

    published: list[CloudEvent[Any]] = field(default_factory=list)
    rejected: dict[str, Any] = field(default_factory=dict)


class MemoryEventBridge:
    """PutEvents in memory: every entry accepted, and kept as the event it stands for."""

    def __init__(self, published: list[CloudEvent[Any]]) -> None:
        self.published = published

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: N803 - boto3's name
        self.published.extend(from_put_events_entry(entry) for entry in Entries)
        return {"FailedEntryCount": 0, "Entries": [{"EventId": f"memory-{len(self.published)}-{i}"}
                                                   for i in range(len(Entries))]}


class MemoryStateTables:
    """DynamoDB's BatchWriteItem and BatchGetItem in memory, items in their wire form keyed by ``id``:
    the two calls the seeding and a state table's reader make."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, dict[str, Any]]] = {}

    def batch_write_item(self, RequestItems: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:  # noqa: N803
        for table, requests in RequestItems.items():
            for request in requests:
                item = request["PutRequest"]["Item"]
                self.tables.setdefault(table, {})[item["id"]["S"]] = item
        return {"UnprocessedItems": {}}

    def batch_get_item(self, RequestItems: dict[str, dict[str, Any]]) -> dict[str, Any]:  # noqa: N803
        items = {table: self.tables.get(table, {}) for table in RequestItems}
        return {"Responses": {table: [items[table][key["id"]["S"]] for key in spec["Keys"] if key["id"]["S"] in items[table]]
                              for table, spec in RequestItems.items()},
                "UnprocessedKeys": {}}


class MemoryConsumer:
    """A declared consumer's real handler, its AWS calls in memory."""

    def __init__(self, declaration: Consumer) -> None:
        environment = {
            "POWERTOOLS_SERVICE_NAME": declaration.name, "POWERTOOLS_METRICS_NAMESPACE": "Fuzz",
            "INFERBUS_MODELS": ",".join(declaration.models), "IDEMPOTENCY_TABLE_NAME": "fuzz",
            "IDEMPOTENCY_TTL_SECONDS": "60", "EVENT_BUS_NAME": "fuzz", "RESULT_SOURCE": declaration.result_source,
            "CONSUMES": declaration.accepts.type, "PRODUCES": declaration.result_type, "INVALID_EVENTS_QUEUE_URL": "fuzz",
            "LAMBDA_TASK_ROOT": str(HOST.task_root), "POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": "CRITICAL",
        }
        # Its state tables as the embedded runtime makes them: one per declared table, seeded from its file.
        table_names = {table.name: f"fuzz-{table.name}" for table in declaration.reads}
        if declaration.reads:
            environment["INFERBUS_STATE_TABLES"] = json.dumps(declaration.state_tables_setting(table_names))
        self.state_tables = MemoryStateTables()
        self.seeded = seed_tables(self.state_tables, declaration.reads, table_names, REPO_ROOT)
        saved = {key: os.environ.get(key) for key in environment}
        os.environ.update(environment)
        try:
            module_name, _, attribute = declaration.handler.rpartition(".")
            if str(HOST.code_root) not in sys.path:
                sys.path.insert(0, str(HOST.code_root))
            sys.modules.pop(module_name, None)
            self.runtime = getattr(importlib.import_module(module_name), attribute).runtime
        finally:
            for key, value in saved.items():
                os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
        self.runtime.dynamodb = self.state_tables  # its claims are in memory too (run), so only its readers use it
        self.declaration = declaration
        self.consumer = self.runtime.consumer

    def run(self, bodies: Sequence[str]) -> tuple[Any, Outcomes]:
        """One batch through the consumer; returns its report and what it published and kept aside."""
        outcomes = Outcomes()
        self.consumer.claims = InMemoryClaimStore(scope=self.declaration.name, expires_after_seconds=60)

        self.runtime.events = MemoryEventBridge(outcomes.published)

        def reject(rejections: Sequence[Any]) -> set[str]:
            outcomes.rejected.update({r.message_id: r for r in rejections})
            return set()

        self.consumer.reject = reject
        records = [{"messageId": f"m-{i}", "body": body, "attributes": {"ApproximateReceiveCount": "1"}}
                   for i, body in enumerate(bodies)]
        report = self.consumer.process(self.consumer.source.records({"Records": records}), remaining_ms=None)
        self.runtime.metrics.clear_metrics()
        return report, outcomes


def contract_verdict(body: str | dict[str, Any], event_type: str) -> tuple[bool, str | None]:
    """The oracle: is ``body`` (text, or as parsed) a valid event of ``event_type`` (the contracts say), and its id."""
    try:
        event = from_eventbridge_event(body)
    except InvalidEventError as invalid:
        return False, invalid.event_id
    return event.type == event_type, event.id


def delivered(detail: Any, *, source: str | None = None, detail_type: str | None = None) -> dict[str, Any]:
    """An event as EventBridge delivers it to a target, around ``detail``."""
    source = source if source is not None else (detail.get("source") if isinstance(detail, dict) else None)
    detail_type = detail_type if detail_type is not None else (detail.get("type") if isinstance(detail, dict) else None)
    return {"version": "0", "id": "00000000-0000-0000-0000-000000000000", "detail-type": detail_type, "source": source,
            "account": "123456789012", "time": "2026-12-02T00:00:00Z", "region": "us-east-1", "resources": [],
            "detail": detail}


def as_body(event: dict[str, Any]) -> str:
    return json.dumps(event, allow_nan=True)
