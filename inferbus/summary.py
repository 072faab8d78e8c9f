"""The demo's summary for people: one table per pipeline, the ledger, latency pictures, what runs only in AWS."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table

from .demo import REJECTION_ERRORS

KIND_TITLES = {
    "image": "images → classifier",
    "analysis": "images → vision flow",
    "text": "texts → text flow",
    "transaction": "transactions → risk",
}
STAGE_ORDER = ["Accept", "Tokenize", "Embed", "Classify", "ExtractEntities", "Analyze", "ScoreMlp", "ScoreSvc", "Merge",
               "RequestReview", "Approve", "PublishApproval", "PublishRejection", "Publish", "EmitFailure"]


HISTOGRAM_MIN_RESULTS = 20  # fewer points make a picture of noise


def latency_histogram(latencies_ms: list[float], bins: int = 8, width: int = 40) -> list[str]:
    """Rows of a text histogram: ``'  120–240 ms │████████      │ 37'``."""
    if not latencies_ms:
        return []
    low, high = min(latencies_ms), max(latencies_ms)
    step = (high - low) / bins or 1.0
    counts = [0] * bins
    for value in latencies_ms:
        counts[min(int((value - low) / step), bins - 1)] += 1
    peak = max(counts)
    return [
        f"{low + i * step:8.0f}–{low + (i + 1) * step:<8.0f} ms │{'█' * round(width * count / peak):<{width}}│ {count}"
        for i, count in enumerate(counts)
    ]


def short_queue_name(logical_id: str) -> str:
    return re.sub("[0-9A-F]{8}$", "", logical_id)


def _kinds_table(data: dict[str, Any]) -> Table:
    table = Table(title="every event sent, and where it ended up", title_justify="left",
                  caption="bad: malformed on purpose; dup: delivered twice; rejected: kept in the invalid-events queue "
                  "with the reason; failed: a workflow gave up after its retries; accuracy vs the true labels; "
                  "latency: sent → result", caption_justify="left")
    for column in ("input", "sent", "bad", "dup", "results", "rejected", "failed", "DLQ", "ledger", "accuracy",
                   "latency p50/p95"):
        table.add_column(column, justify="left" if column == "input" else "right")
    for name, kind in data["kinds"].items():
        accuracy = "—" if kind["accuracy"] is None else f"{kind['accuracy']:.3f}"
        table.add_row(
            KIND_TITLES.get(name, name), str(kind["sent"]), str(kind["malformed"]), str(kind["duplicate_deliveries"]),
            str(kind["results"]), str(kind["rejected"]), str(kind["failure_events"]), str(kind["in_dead_letter_queues"]),
            "[green]ok[/green]" if kind["balanced"] else "[red]OFF[/red]", accuracy,
            f"{kind['latency_ms']['p50'] / 1000:.1f}/{kind['latency_ms']['p95'] / 1000:.1f} s",
        )
    return table


def _workflows_table(data: dict[str, Any]) -> Table:
    table = Table(title="workflows: executions, and p50 per stage in ms: time in the state (the handler's own time)",
                  title_justify="left", caption="Locally one handler runs at a time, so time in a state includes "
                  "waiting for it; retries wait real seconds.", caption_justify="left")
    for column in ("workflow", "executions", "stages"):
        table.add_column(column)
    for name, workflow in sorted(data["workflows"].items()):
        statuses = ", ".join(f"{status.lower()} {count}" for status, count in sorted(workflow["executions"].items()))
        stages, handlers = workflow["stage_latency_ms_p50"], workflow["handler_ms_p50"]
        ordered = sorted((s for s in stages if s in STAGE_ORDER), key=STAGE_ORDER.index)
        table.add_row(name, statuses or "none", "  ".join(
            f"{stage} {stages[stage]:.0f}" + (f" ({handlers[stage]:.0f})" if stage in handlers else "") for stage in ordered))
    return table


def _risk_table(data: dict[str, Any]) -> Table:
    risk, reviews = data["risk_routing"], data["reviews"]
    table = Table(title="risk routing (bus rules on the score) and manual review", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("scored (RiskScored)", str(risk.get("scored", 0)))
    table.add_row("below threshold → approved automatically", str(risk.get("auto_approved", 0)))
    table.add_row("at/above threshold → review queue", f"{reviews.get('requested', 0)} cases waited for a person")
    table.add_row("reviewer decisions", f"approved {reviews.get('approved', 0)}, rejected {reviews.get('rejected', 0)}, "
                  f"expired {reviews.get('expired', 0)}; still pending {reviews.get('still_pending', 0)}")
    table.add_row("ReviewCompleted events", f"{risk.get('reviews_completed', 0)} (approved {risk.get('review_approved', 0)}, "
                  f"rejected {risk.get('review_rejected', 0)})")
    table.add_row("offers routed by segment", f"new {risk.get('offers_new', 0)}, returning {risk.get('offers_returning', 0)}")
    return table


def print_summary(report: Any, console: Console | None = None) -> None:
    console = console or Console()
    data = report.as_dict()
    verdict = "[bold green]every event accounted for[/bold green]" if data["balanced"] else "[bold red]LEDGER DOES NOT BALANCE[/bold red]"
    console.print(f"[bold]inferbus embedded demo[/bold] — {verdict} in {data['seconds']} s "
                  f"({data['rejected_by_bus']} entries rejected by PutEvents; "
                  f"{len(data['invalid_results'])} published events break their contract)")
    for problem in data["invalid_results"]:
        console.print(f"  [red]{problem}[/red]")
    console.print(_kinds_table(data))
    console.print(_workflows_table(data))
    console.print(_risk_table(data))

    failures = [(name, failure) for name, workflow in data["workflows"].items() for failure in workflow["failures"]
                if failure["error"] not in REJECTION_ERRORS]
    if failures or data["dead_letter_reasons"] or data["rejection_reasons"]:
        table = Table(title="why each event did not get a result", title_justify="left")
        for column in ("where", "event id", "reason"):
            table.add_column(column)
        for event_id, reason in data["rejection_reasons"].items():
            table.add_row("invalid-events queue", event_id, reason)
        for name, failure in failures:
            table.add_row(f"{name} → failure event", str(failure["input_id"]), f"{failure['error']}: {failure['cause']}")
        for event_id, reason in data["dead_letter_reasons"].items():
            table.add_row("DLQ", event_id, reason)
        console.print(table)
    dlqs = ", ".join(f"{short_queue_name(queue)} {count}" for queue, count in data["dead_letters"].items() if count)
    console.print(f"[bold]dead-letter queues[/bold]: {dlqs or 'all empty'}")
    invocations = ", ".join(f"{short_queue_name(name).removesuffix('Function')} {count}"
                            for name, count in data["invocations"].items())
    console.print(f"[bold]Lambda invocations[/bold]: {invocations}")
    console.print(f"[bold]image classifier batches[/bold]: sizes {data['image_batch_sizes']}, ONE session.run per batch, "
                  f"p50 {data['inference_ms_per_batch']['p50']} ms")
    console.print("[bold]metrics (EMF, summed)[/bold]: " + ", ".join(f"{k}={v:g}" for k, v in sorted(data["metrics"].items())))

    for name, kind in report.kinds.items():
        if len(kind.latencies_ms) >= HISTOGRAM_MIN_RESULTS:
            console.print(f"[bold]latency, submitted → result: {KIND_TITLES.get(name, name)}[/bold] (events per bin)")
            for row in latency_histogram(kind.latencies_ms):
                console.print(row, highlight=False)
    for title, entries in (("not run locally (cloud-only)", report.cloud_only), ("run locally, with limits", report.partly_local)):
        grouped = Counter((resource_type, why) for _, resource_type, why in entries)
        console.print(f"[bold]{title}[/bold]")
        for (resource_type, why), count in sorted(grouped.items()):
            console.print(f"  {resource_type} ×{count}: {why}")
