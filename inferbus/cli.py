"""``inferbus``: run the pipeline embedded on moto, or send events to a deployed bus.

Examples
--------
    inferbus demo                      # the whole pipeline on this laptop, no AWS account
    inferbus demo --images 360 --json  # machine-readable summary
    inferbus send --bus inferbus --image 3   # one held-out digit to a deployed stack (real AWS)
    inferbus redrive --dlq-url URL --source-url URL --dry-run   # why each DLQ message failed
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from typing import Any


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


def _print_summary(report: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    data = report.as_dict()
    table = Table(title="inferbus embedded demo", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    sent = data["sent"]
    table.add_row("events sent", f"{sent['valid']} images + {sent['malformed']} malformed + {sent['duplicates']} duplicate deliveries")
    table.add_row("rejected by PutEvents", str(data["rejected_by_bus"]))
    table.add_row("classified (ImageClassified)", f"{data['classified']} of {sent['valid']}, accuracy {data['accuracy']:.4f} vs true labels")
    table.add_row("duplicate results", f"{data['duplicate_results']} (duplicate deliveries skipped: {data['metrics'].get('DuplicatesSkipped', 0):g})")
    for queue, count in data["dead_letters"].items():
        table.add_row(f"DLQ {re.sub('[0-9A-F]{8}$', '', queue)}", str(count))
    ledger = "balanced" if data["balanced"] else "NOT BALANCED"
    table.add_row("ledger", f"{data['classified']} classified + {sum(data['dead_letters'].values())} in DLQs = "
                  f"{sent['valid'] + sent['malformed']} distinct events sent: {ledger}")
    table.add_row("invocations", f"{data['invocations']} (batch sizes {data['batch_sizes']})")
    table.add_row("latency submitted→classified", f"p50 {data['latency_ms']['p50']} ms, p95 {data['latency_ms']['p95']} ms")
    table.add_row("session.run per batch", f"p50 {data['inference_ms_per_batch']['p50']} ms, max {data['inference_ms_per_batch']['max']} ms")
    table.add_row("metrics (EMF, summed)", ", ".join(f"{k}={v:g}" for k, v in sorted(data["metrics"].items())))
    table.add_row("wall time", f"{data['seconds']} s")
    console.print(table)
    if report.latencies_ms:
        console.print("[bold]latency, submitted → classified[/bold] (events per bin)")
        for row in latency_histogram(report.latencies_ms):
            console.print(row, highlight=False)
    if data["dead_letter_reasons"]:
        reasons = Table(title="why each DLQ message failed (from the handler's structured logs)", title_justify="left")
        reasons.add_column("event id")
        reasons.add_column("reason")
        for event_id, reason in data["dead_letter_reasons"].items():
            reasons.add_row(event_id, reason)
        console.print(reasons)
    for title, entries in (("not run locally (cloud-only)", report.cloud_only), ("run locally, with limits", report.partly_local)):
        grouped = Counter((resource_type, why) for _, resource_type, why in entries)
        console.print(f"[bold]{title}[/bold]")
        for (resource_type, why), count in sorted(grouped.items()):
            console.print(f"  {resource_type} ×{count}: {why}")


def _demo(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    from .demo import run_demo

    if args.json:
        report = run_demo(images=args.images, duplicates=args.duplicates)
        print(json.dumps(report.as_dict(), indent=2))
    else:
        with Progress(transient=True) as progress:
            tasks: dict[str, Any] = {}

            def show(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = progress.add_task(stage, total=total)
                progress.update(tasks[stage], completed=done)

            report = run_demo(images=args.images, duplicates=args.duplicates, progress=show)
        _print_summary(report)
    return 0 if report.balanced else 1


def _send(args: argparse.Namespace) -> int:
    import boto3
    import numpy as np

    from .demo import DEMO_SOURCE, HOLDOUT
    from inferbus_lambda.contracts import ImageSubmitted, new_event, to_put_events_entry

    holdout = np.load(HOLDOUT)
    event = new_event(ImageSubmitted(pixels=[int(v) for v in holdout["images"][args.image]]), source=args.source or DEMO_SOURCE)
    response = boto3.client("events").put_events(Entries=[to_put_events_entry(event, args.bus)])
    print(json.dumps({"id": event.id, "true_label": int(holdout["labels"][args.image]), "response": response["Entries"]}, default=str))
    return 1 if response.get("FailedEntryCount") else 0


def _redrive(args: argparse.Namespace) -> int:
    import boto3
    from rich.console import Console
    from rich.table import Table

    from .redrive import inspect_dead_letters, redrive

    sqs = boto3.client("sqs")
    letters = inspect_dead_letters(sqs, args.dlq_url)
    table = Table(title=f"{len(letters)} messages in {args.dlq_url.rsplit('/', 1)[-1]}", title_justify="left")
    for column in ("event id", "receives", "verdict"):
        table.add_column(column)
    for letter in letters:
        table.add_row(letter.event_id or "?", str(letter.receive_count), letter.verdict)
    Console().print(table)
    if args.dry_run:
        movable = sum(letter.valid for letter in letters) if not args.all else len(letters)
        print(f"dry run: would move {movable} of {len(letters)} to {args.source_url}")
        return 0
    moved = redrive(sqs, args.dlq_url, args.source_url, only_valid=not args.all)
    print("started an SQS message move task for every message" if moved < 0 else f"moved {moved} of {len(letters)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inferbus", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run the whole pipeline embedded on moto and print what happened")
    demo.add_argument("--images", type=int, default=300, help="held-out digit images to send, 1-360 (default 300)")
    demo.add_argument("--duplicates", type=int, default=5, help="events to deliver a second time (default 5)")
    demo.add_argument("--json", action="store_true", help="print the summary as JSON")
    demo.set_defaults(run=_demo)
    send = commands.add_parser("send", help="put one ImageSubmitted event on a deployed bus (uses your AWS credentials)")
    send.add_argument("--bus", required=True, help="event bus name (stack output EventBusName)")
    send.add_argument("--image", type=int, default=0, help="index of the held-out image, 0-359 (default 0)")
    send.add_argument("--source", help="CloudEvents source (default inferbus.demo)")
    send.set_defaults(run=_send)
    redrive = commands.add_parser("redrive", help="show why DLQ messages failed, and move them back to their queue")
    redrive.add_argument("--dlq-url", required=True, help="the dead-letter queue (stack output ImageDeadLetterQueueUrl)")
    redrive.add_argument("--source-url", required=True, help="the queue to move them back to (stack output ImageQueueUrl)")
    redrive.add_argument("--dry-run", action="store_true", help="only show what would move and why each failed")
    redrive.add_argument("--all", action="store_true",
                         help="move every message, also those that would fail again (uses SQS StartMessageMoveTask)")
    redrive.set_defaults(run=_redrive)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo" and not 1 <= args.images <= 360:
        build_parser().error(f"--images must be in [1, 360], got {args.images}")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
