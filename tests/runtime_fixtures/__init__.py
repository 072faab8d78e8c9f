"""Small handlers and template builders for the embedded runtime's own tests.

The handlers are imported by the runtime from the template's ``Handler`` property
(``tests.runtime_fixtures.<module>.handler``), as the real ones are from ``functions/``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from inferbus_lambda.contracts import from_put_events_entry

from inferbus.runtime import RUNTIME_EXITED, TIMED_OUT, EmbeddedPipeline, HostConfig

REPO_ROOT = Path(__file__).resolve().parents[2]
# The runtime's own tests: handlers import from the repository root (tests.runtime_fixtures.*),
# and these exceptions stand for the Lambda service ending an invocation.
HOST = HostConfig(code_root=REPO_ROOT, task_root=REPO_ROOT,
                  service_failures={"FixtureTimeout": TIMED_OUT, "FixtureCrash": RUNTIME_EXITED})


def runtime(template: dict[str, Any], **options: Any) -> EmbeddedPipeline:
    """The embedded runtime on a hand-written template, as any application would start it."""
    return EmbeddedPipeline(template, stack_name="RuntimeTest", host=HOST, **options)


def log(message: str, **fields: object) -> None:
    """One JSON log line on stdout, as Powertools' Logger writes it."""
    print(json.dumps({"level": "INFO", "message": message, "tag": os.environ.get("TAG"), **fields}))


def metric(name: str, value: float) -> None:
    """One EMF line on stdout, as Powertools' Metrics flushes it."""
    print(json.dumps({
        "_aws": {"Timestamp": int(time.time() * 1000),
                 "CloudWatchMetrics": [{"Namespace": "RuntimeTest", "Dimensions": [["service"]],
                                        "Metrics": [{"Name": name, "Unit": "Count"}]}]},
        "service": os.environ.get("TAG", "test"),
        name: [value],
    }))


class Metrics:
    """A metrics sink that keeps nothing: the fixtures' tests read the ledger."""

    def add_metric(self, **_: object) -> None:
        """The test reads the ledger, not metrics."""


class LedgerBus:
    """PutEvents that accepts every entry and writes its result's subject in the ledger."""

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: N803 - boto3's name
        for entry in Entries:
            log("published", subject=from_put_events_entry(entry).subject)
        return {"FailedEntryCount": 0, "Entries": [{"EventId": str(i)} for i, _ in enumerate(Entries)]}
