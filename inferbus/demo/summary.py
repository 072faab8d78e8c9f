"""The demo's summary for people: the ledger per component, workflows, chains, latency pictures, what is cloud-only."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from inferbus_lambda.errors import REJECTION_ERRORS
from rich import box
from rich.console import Console
from rich.table import Table

from ..cli_support import print_records

from .report import DEAD_LETTER_COPIES_NOTE, STAGE_TIME_NOTE, dead_letter_cell

DEPLOY_HINT = ("Next: deploy it to your AWS account (README, 'Deploy to AWS'): make setup && npx cdk bootstrap && "
               "npx cdk deploy; then inferbus send --bus inferbus --sample image-classifier")

HISTOGRAM_MIN_RESULTS = 20  # fewer points make a picture of noise


def calls_said(run: dict[str, Any]) -> str:
    """How many model calls a consumer's batches took, as measured: one per batch, or the counts (an ordered
    batch runs in rounds, one call each; a batch whose records were all set aside makes none).

    >>> calls_said({"batch_sizes": [10, 4], "inference_calls": 2})
    'ONE model call per batch'
    >>> calls_said({"batch_sizes": [10, 4], "inference_calls": 7})
    '7 model calls for 2 batches'
    """
    calls, batches = run.get("inference_calls", 0), len(run["batch_sizes"])
    return "ONE model call per batch" if calls == batches else f"{calls} model calls for {batches} batches"


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


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value / 1000:.1f}"


def _table(title: str, caption: str | None = None) -> Table:
    """A table that reads at 80 columns and piped: light borders, cells fold instead of being cut."""
    return Table(title=title, title_justify="left", caption=caption, caption_justify="left", box=box.SIMPLE_HEAD,
                 pad_edge=False, collapse_padding=True)


def _kinds_table(data: dict[str, Any]) -> Table:
    table = _table("every event sent, and where it ended up",
                   "bad: malformed on purpose; dup: delivered twice; rej: kept in the invalid-events queue with the reason; "
                   "unr: taken by no rule, kept there by the unrouted-events check with the reason; "
                   f"fail: a workflow gave up after its retries; DLQ: in a dead-letter queue ({DEAD_LETTER_COPIES_NOTE})")
    for column in ("component", "sent", "bad", "dup", "results", "rej", "unr", "fail", "DLQ", "ledger"):
        table.add_column(column, justify="left" if column == "component" else "right",
                         overflow="fold", no_wrap=column != "component")
    for name, kind in data["kinds"].items():
        table.add_row(
            name, str(kind["sent"]), str(kind["malformed"]), str(kind["duplicate_deliveries"]), str(kind["results"]),
            str(kind["rejected"]), str(kind["unrouted"]), str(kind["failure_events"]), dead_letter_cell(kind), _ledger_cell(kind),
        )
    return table


def _ledger_cell(kind: dict[str, Any]) -> str:
    """ok / OFF; an ordered consumer's cell says whether each key (fifo) or partition (kafka) kept its order."""
    if "out_of_order_results" not in kind:
        return "[green]ok[/green]" if kind["balanced"] else "[red]OFF[/red]"
    if kind["out_of_order_results"]:
        return f"[red]OFF: {kind['out_of_order_results']} out of order[/red]"
    return "[green]ok, in order[/green]" if kind["balanced"] else "[red]OFF[/red]"


def _quality_table(data: dict[str, Any]) -> Table:
    table = _table("answers: accuracy against the true answers, latency from sent to result")
    for column in ("component", "input", "accuracy", "p50 s", "p95 s"):
        table.add_column(column, justify="left" if column in ("component", "input") else "right", overflow="fold")
    for name, kind in data["kinds"].items():
        accuracy = "—" if kind["accuracy"] is None else f"{kind['accuracy']:.3f}"
        table.add_row(name, kind["input_type"], accuracy, _seconds(kind["latency_ms"]["p50"]),
                      _seconds(kind["latency_ms"]["p95"]))
    return table


def _scores_table(data: dict[str, Any]) -> Table:
    table = _table("held-out scores: each component's models, measured on the data named (models/manifest.json)")
    for column in ("component", "scores", "data"):
        table.add_column(column, overflow="fold")
    for name, scored in _scored(data).items():
        table.add_row(name, ", ".join(f"{metric} {value:.4g}" for metric, value in scored["scores"].items()),
                      scored["scores_data"] or "—")
    return table


def _scored(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each component with held-out scores: those the demo sends to (``kinds``), then those downstream (``flows``)."""
    scored = {name: kind for name, kind in data["kinds"].items() if kind["scores"]}
    for name, flow in data.get("flows", {}).items():
        if flow.get("scores") and name not in scored:
            scored[name] = flow
    return scored


def _ms(figures: dict[str, Any]) -> str:
    p50, p95 = figures["p50"], figures["p95"]
    return "—" if p50 is None else f"{p50:.0f}/{p95:.0f}"


def _flows_table(data: dict[str, Any]) -> Table:
    table = _table("what the dashboard would show, from the EMF the handlers emitted (ms p50/p95 per stage)",
                   "event latency: now minus the event's time when the stage took it; processing: the stage's own "
                   "time; errors: % of records or executions; rate: per minute of this run. Throttles, concurrency, "
                   "CPU and memory are cloud-only.")
    for column in ("flow", "stage", "event lat.", "processing", "errors %", "rate/min"):
        table.add_column(column, justify="left" if column in ("flow", "stage") else "right", overflow="fold")
    for name, flow in data["flows"].items():
        first = True
        for stage, figures in flow["stages"].items():
            rate = flow["error_rate_percent"]
            table.add_row(name if first else "", stage, _ms(figures["event_latency_ms"]), _ms(figures["processing_ms"]),
                          ("—" if rate is None else f"{rate:.1f}") if first else "",
                          ("—" if flow["per_minute"] is None else f"{flow['per_minute']:.0f}") if first else "")
            first = False
    return table


def _workflows_table(data: dict[str, Any]) -> Table:
    table = _table("workflows: executions, and p50 per stage in ms: time in the state (the handler's own time)",
                   STAGE_TIME_NOTE)
    for column in ("workflow", "executions", "stages"):
        table.add_column(column, overflow="fold")
    for name, workflow in sorted(data["workflows"].items()):
        statuses = ", ".join(f"{status.lower()} {count}" for status, count in sorted(workflow["executions"].items()))
        stages, handlers = workflow["stage_latency_ms_p50"], workflow["handler_ms_p50"]
        table.add_row(name, statuses or "none", "  ".join(
            f"{stage} {ms:.0f}" + (f" ({handlers[stage]:.0f})" if handlers.get(stage) is not None else "")
            for stage, ms in stages.items() if ms is not None))
    return table


def _chains_table(data: dict[str, Any]) -> Table:
    table = _table("results routed on: who took each one, and what became of it",
                   "untaken: matched by no rule of a component; missing: taken, and no result, failure or pending "
                   "review for it")
    for column in ("event", "produced", "taken by", "outcomes", "untaken", "missing"):
        table.add_column(column, justify="left" if column in ("event", "taken by", "outcomes") else "right",
                         overflow="fold", no_wrap=column == "event")
    for event_type, chain in data["chains"].items():
        taken = ", ".join(f"{name} {count}" for name, count in chain["taken"].items())
        outcomes = "; ".join(f"{name}: " + ", ".join(f"{k} {v}" for k, v in outcome.items() if v)
                             for name, outcome in chain["outcomes"].items())
        table.add_row(event_type, str(chain["produced"]), taken, outcomes or "—", str(chain["untaken"]),
                      str(chain["missing_outcomes"]))
    return table


def _synthesis(data: dict[str, Any]) -> str:
    """What ran before the events: the synth too, unless an earlier synth's template was taken back."""
    return "" if data.get("template_kept") else "synthesis and "


def print_summary(report: Any, console: Console | None = None) -> None:
    console = console or Console()
    data = report.as_dict()
    verdict = "[bold green]every event accounted for[/bold green]" if data["balanced"] else "[bold red]LEDGER DOES NOT BALANCE[/bold red]"
    console.print(f"[bold]inferbus embedded demo[/bold] — {verdict} in {data['seconds']} s, "
                  f"{data['running_seconds']} s after {_synthesis(data)}provisioning "
                  f"({data['rejected_by_bus']} entries rejected by PutEvents; "
                  f"{len(data['invalid_results'])} published events break their contract)")
    if data.get("template_kept"):
        console.print("  [dim]template: the last synth's, nothing it comes from having changed "
                      "(kept in .inferbus/templates; delete it to synthesize again)[/dim]")
    for problem in data["invalid_results"]:
        console.print(f"  [red]{problem}[/red]")
    console.print(_kinds_table(data))
    console.print(_quality_table(data))
    if _scored(data):
        console.print(_scores_table(data))
    if data["workflows"]:
        console.print(_workflows_table(data))
    if data["chains"]:
        console.print(_chains_table(data))
    reviews = data["reviews"]
    if reviews.get("requested"):
        console.print(f"[bold]reviews[/bold]: {reviews['requested']} cases waited for a person; decided "
                      f"approved {reviews.get('approved', 0)}, rejected {reviews.get('rejected', 0)}, "
                      f"expired {reviews.get('expired', 0)}; still pending {reviews.get('still_pending', 0)}")
    if data["routed"]:
        console.print("[bold]routed to your services' queues[/bold]: "
                      + ", ".join(f"{name} {count}" for name, count in data["routed"].items()))

    failures = [(name, failure) for name, workflow in data["workflows"].items() for failure in workflow["failures"]
                if failure["error"] not in REJECTION_ERRORS]
    if failures or data["dead_letter_reasons"] or data["rejection_reasons"]:
        print_records(console, "why each event did not get a result", [
            *((event_id, [("where", "invalid-events queue"), ("reason", reason)])
              for event_id, reason in data["rejection_reasons"].items()),
            *((str(failure["input_id"]), [("where", f"{name} → failure event"),
                                          ("reason", f"{failure['error']}: {failure['cause']}")]) for name, failure in failures),
            *((event_id, [("where", "DLQ"), ("reason", reason)]) for event_id, reason in data["dead_letter_reasons"].items())])
    dlqs = ", ".join(f"{short_queue_name(queue)} {count}" for queue, count in data["dead_letters"].items() if count)
    console.print(f"[bold]dead-letter queues[/bold]: {dlqs or 'all empty'}")
    console.print("[bold]Lambda invocations[/bold]: " + ", ".join(f"{name} {count}" for name, count in data["invocations"].items()))
    for name, run in data["consumers"].items():
        if run["batch_sizes"]:
            console.print(f"[bold]{name} batches[/bold]: sizes {run['batch_sizes']}, {calls_said(run)}, "
                          f"p50 {run['inference_ms_p50']} ms")
    console.print("[bold]metrics (EMF counts, summed)[/bold]: " + ", ".join(
        f"{k}={v:g}" for k, v in sorted(data["metrics"].items()) if not k.endswith("Ms")))

    if data["flows"]:
        console.print(_flows_table(data))
    for name, kind in report.kinds.items():
        if len(kind.latencies_ms) >= HISTOGRAM_MIN_RESULTS:
            console.print(f"[bold]latency, submitted → result: {name}[/bold] (events per bin)")
            for row in latency_histogram(kind.latencies_ms, width=min(40, max(10, console.width - 34))):
                console.print(row, highlight=False)
    for title, entries in (("not run locally (cloud-only)", report.cloud_only), ("run locally, with limits", report.partly_local)):
        grouped = Counter((resource_type, why) for _, resource_type, why in entries)
        console.print(f"[bold]{title}[/bold]")
        for (resource_type, why), count in sorted(grouped.items()):
            console.print(f"  {resource_type} ×{count}: {why}", highlight=False)
    replay = data["replay"]
    if replay is not None:
        verdict = "[green]nothing processed twice[/green]" if replay["safe"] else "[red]WORK DONE TWICE[/red]"
        console.print(f"[bold]replay[/bold] {replay['replay']}: {replay['replayed']} archived events replayed; "
                      f"{verdict}: consumers skipped {replay['duplicates_skipped']} as duplicates, workflows ended "
                      f"{replay['workflow_duplicates']} executions as Duplicate; {replay['rerejected']} inputs refused "
                      f"again (same ids and reasons); new results: {len(replay['new_results'])}")
        for problem in replay["new_results"]:
            console.print(f"  [red]{problem}[/red]")
    console.print(DEPLOY_HINT, highlight=False)
