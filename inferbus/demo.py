"""The embedded end-to-end demo: real digit images in, classifications out, every event accounted for."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from inferbus.runtime.lambda_host import add_code_root_to_path

REPO_ROOT = Path(__file__).resolve().parents[1]
HOLDOUT = REPO_ROOT / "models" / "digits-holdout.npz"
DEMO_SOURCE = "inferbus.demo"
add_code_root_to_path()  # the CLI validates with the same contracts the handlers use

from inferbus_lambda.contracts import ImageSubmitted, new_event, to_put_events_entry  # noqa: E402


def malformed_entries(template: dict[str, Any], bus_name: str) -> list[tuple[str, dict[str, Any]]]:
    """Events that reach the image queue but break the ImageSubmitted contract, each with why."""
    cases: list[tuple[str, Any]] = [
        ("63 pixels", lambda d: d["data"].update(pixels=d["data"]["pixels"][:63])),
        ("pixel 17 > 16", lambda d: d["data"]["pixels"].__setitem__(5, 17)),
        ("pixel as a string", lambda d: d["data"]["pixels"].__setitem__(0, "7")),
        ("extra data field", lambda d: d["data"].update(label=3)),
        ("no correlationid", lambda d: d.pop("correlationid")),
        ("time without zone", lambda d: d.update(time="2026-01-01T00:00:00")),
    ]
    entries = []
    for index, (why, corrupt) in enumerate(cases):
        detail = json.loads(template["Detail"])
        detail["id"] = f"malformed-{index}"
        corrupt(detail)
        entries.append((why, {**template, "Detail": json.dumps(detail), "EventBusName": bus_name}))
    return entries


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


@dataclass
class DemoReport:
    sent_valid: int = 0
    sent_malformed: int = 0
    sent_duplicates: int = 0
    rejected_by_bus: int = 0
    classified: int = 0
    correct: int = 0
    duplicate_results: int = 0
    invocations: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    inference_ms: list[float] = field(default_factory=list)
    dead_letters: dict[str, int] = field(default_factory=dict)
    dead_letter_reasons: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    cloud_only: list[tuple[str, str, str]] = field(default_factory=list)
    partly_local: list[tuple[str, str, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def accuracy(self) -> float:
        return self.correct / self.classified if self.classified else 0.0

    @property
    def in_dead_letter_queues(self) -> int:
        return sum(self.dead_letters.values())

    @property
    def balanced(self) -> bool:
        """Every distinct event sent is classified exactly once or sits in a DLQ."""
        return self.classified + self.in_dead_letter_queues == self.sent_valid + self.sent_malformed and not self.duplicate_results

    def as_dict(self) -> dict[str, Any]:
        return {
            "sent": {"valid": self.sent_valid, "malformed": self.sent_malformed, "duplicates": self.sent_duplicates},
            "rejected_by_bus": self.rejected_by_bus,
            "classified": self.classified,
            "accuracy": round(self.accuracy, 4),
            "duplicate_results": self.duplicate_results,
            "dead_letters": self.dead_letters,
            "dead_letter_reasons": self.dead_letter_reasons,
            "balanced": self.balanced,
            "invocations": self.invocations,
            "batch_sizes": self.batch_sizes,
            "latency_ms": {"p50": round(percentile(self.latencies_ms, 50), 1), "p95": round(percentile(self.latencies_ms, 95), 1)},
            "inference_ms_per_batch": {"p50": round(percentile(self.inference_ms, 50), 3), "max": round(max(self.inference_ms, default=0), 3)},
            "metrics": self.metrics,
            "cloud_only": [f"{t} {lid}: {why}" for lid, t, why in self.cloud_only],
            "partly_local": [f"{t} {lid}: {why}" for lid, t, why in self.partly_local],
            "seconds": round(self.seconds, 2),
        }


def run_demo(images: int = 300, duplicates: int = 5, progress: Any = None, template: dict[str, Any] | None = None) -> DemoReport:
    """Send ``images`` held-out digits (+ malformed events + duplicate deliveries), drain, account.

    ``progress``, if given, is called as ``progress(stage, done, total)``; ``template``, if
    given, is used instead of synthesizing the app.
    """
    from inferbus.runtime import EmbeddedPipeline

    started = time.perf_counter()
    holdout = np.load(HOLDOUT)
    pixels, labels = holdout["images"][:images], holdout["labels"][:images]
    report = DemoReport()
    notify = progress or (lambda stage, done, total: None)

    notify("synthesize + provision", 0, 1)
    with EmbeddedPipeline(template) as pipeline:
        notify("synthesize + provision", 1, 1)
        events = [
            new_event(ImageSubmitted(pixels=[int(value) for value in image]), source=DEMO_SOURCE, correlationid=f"demo-{i}")
            for i, image in enumerate(pixels)
        ]
        truth = {event.id: int(label) for event, label in zip(events, labels, strict=True)}
        sent_at = {event.id: event.time for event in events}
        entries = [to_put_events_entry(event, pipeline.bus_name) for event in events]
        bad = malformed_entries(entries[0], pipeline.bus_name)
        reasons_by_id = {json.loads(entry["Detail"])["id"]: why for why, entry in bad}
        stream = entries + [entry for _, entry in bad] + entries[:duplicates]  # last: at-least-once redeliveries
        report.sent_valid, report.sent_malformed, report.sent_duplicates = len(entries), len(bad), duplicates

        for start in range(0, len(stream), 10):
            report.rejected_by_bus += len(pipeline.put_events(stream[start : start + 10]))
            pipeline.pump()  # the poller runs while the producer sends
            notify("send", min(start + 10, len(stream)), len(stream))
        pipeline.drain()
        notify("drain", 1, 1)

        seen: set[str] = set()
        for delivered in pipeline.tapped_events():
            if delivered["detail-type"] != "ImageClassified":
                continue
            detail = delivered["detail"]
            input_id = detail["data"]["input_id"]
            if input_id in seen:
                report.duplicate_results += 1
                continue
            seen.add(input_id)
            report.classified += 1
            report.correct += int(detail["data"]["label"] == truth.get(input_id))
            latency = datetime.fromisoformat(detail["time"]) - sent_at[input_id]
            report.latencies_ms.append(latency.total_seconds() * 1000)

        for logical_id, messages in pipeline.dead_letters().items():
            report.dead_letters[logical_id] = len(messages)
            for message in messages:
                event_id = json.loads(message["Body"])["detail"].get("id")
                report.dead_letter_reasons[event_id] = reasons_by_id.get(event_id, "?")

        for function in pipeline.functions.values():
            report.invocations += len(function.invocations)
            report.batch_sizes += [invocation.records for invocation in function.invocations]
            for name, values in function.metrics.items():
                report.metrics[name] = round(report.metrics.get(name, 0.0) + sum(values), 3)
            report.inference_ms += function.metrics.get("InferenceMs", [])
            for line in function.logs:
                if line.get("status") and line.get("event_id") in report.dead_letter_reasons:
                    report.dead_letter_reasons[line["event_id"]] = line["reason"]
        report.cloud_only = pipeline.deployment.cloud_only
        report.partly_local = pipeline.deployment.partly_local
    report.seconds = time.perf_counter() - started
    return report
