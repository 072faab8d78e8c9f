"""``inferbus``: run the pipeline embedded on moto, or send events to a deployed bus.

Examples
--------
    inferbus demo                      # the whole pipeline on this laptop, no AWS account
    inferbus demo --texts 100 --json   # machine-readable summary
    inferbus send --bus inferbus --image 3   # one held-out digit to a deployed stack (real AWS)
    inferbus redrive DLQ_URL --dry-run                            # why each DLQ message failed
    inferbus reviews list --queue-url URL                       # high-risk cases waiting for a person
    inferbus reviews approve TXN_ID --queue-url URL --note "..."  # resume its workflow
    inferbus chaos --events 5000       # faults on purpose, then a ledger of every event (embedded)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _with_progress(run: Callable[[Callable[[str, int, int], None]], T]) -> T:
    """Run ``run(progress)`` with a progress bar per stage; ``progress(stage, done, total)``."""
    from rich.progress import Progress

    with Progress(transient=True) as bars:
        tasks: dict[str, Any] = {}

        def show(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bars.add_task(stage, total=total)
            bars.update(tasks[stage], completed=done, total=total)

        return run(show)


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo
    from .summary import print_summary

    sizes = dict(images=args.images, analyses=args.analyses, texts=args.texts, transactions=args.transactions,
                 duplicates=args.duplicates)
    if args.json:
        report = run_demo(**sizes)
        print(json.dumps(report.as_dict(), indent=2))
    else:
        report = _with_progress(lambda show: run_demo(**sizes, progress=show))
        print_summary(report)
    return 0 if report.balanced else 1


def _send(args: argparse.Namespace) -> int:
    import boto3

    from .demo import DEMO_SOURCE, held_out_input
    from inferbus_lambda.contracts import new_event, to_put_events_entry

    from pydantic import ValidationError

    try:
        if args.text is not None:
            data, truth = held_out_input("text", text=args.text)
        elif args.transaction is not None:
            data, truth = held_out_input("transaction", index=args.transaction, segment=args.segment)
        else:
            data, truth = held_out_input("image", index=args.image, full=args.full)
    except ValidationError as error:
        print(f"inferbus send: not sent, the event breaks its contract: {error.errors(include_url=False)[0]['msg']}",
              file=sys.stderr)
        return 2
    event = new_event(data, source=args.source or DEMO_SOURCE)  # validated by the consumers' own contracts
    response = boto3.client("events").put_events(Entries=[to_put_events_entry(event, args.bus)])
    print(json.dumps({"id": event.id, "type": event.type, "true_label": truth, "response": response["Entries"]}, default=str))
    return 1 if response.get("FailedEntryCount") else 0


def _redrive(args: argparse.Namespace) -> int:
    import boto3
    from rich.console import Console
    from rich.table import Table

    from .redrive import RedriveError, inspect_dead_letters, redrive, resolve_queues

    sqs = boto3.client("sqs")
    try:
        dlq_url, source_url = resolve_queues(sqs, args.queue, args.source_url)
    except RedriveError as error:
        print(f"inferbus redrive: {error}", file=sys.stderr)
        return 2
    letters = inspect_dead_letters(sqs, dlq_url)
    table = Table(title=f"{len(letters)} messages in {dlq_url.rsplit('/', 1)[-1]}", title_justify="left")
    for column in ("event id", "receives", "verdict"):
        table.add_column(column)
    for letter in letters:
        table.add_row(letter.event_id or "?", str(letter.receive_count), letter.verdict)
    Console().print(table)
    if args.dry_run:
        movable = sum(letter.valid for letter in letters) if not args.all else len(letters)
        print(f"dry run: would move {movable} of {len(letters)} to {source_url}")
        return 0
    moved = redrive(sqs, dlq_url, source_url, only_valid=not args.all)
    print("started an SQS message move task for every message" if moved < 0 else f"moved {moved} of {len(letters)}")
    return 0


def _chaos(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from .chaos import FaultRates, run_chaos

    rates = FaultRates(record_error_rate=args.record_error_rate, timeout_rate=args.timeout_rate,
                       crash_after_publish_rate=args.crash_rate, duplicate_rate=args.duplicate_rate, latency_ms=args.latency_ms)
    options = dict(events=args.events, rates=rates, seed=args.seed, redrive=not args.no_redrive, batch_size=args.batch_size)
    if args.json:
        report = run_chaos(**options)
        print(json.dumps(report.as_dict(), indent=2))
        return 0 if report.balanced else 1
    report = _with_progress(lambda show: run_chaos(**options, progress=show))
    console = Console()
    timeouts = report.failed_invocations.get("Sandbox.Timedout", 0)
    crashes = report.failed_invocations.get("Runtime.ExitError", 0)
    faults = Table(title=f"chaos: {report.events} images through the image classifier, seed {report.seed}, "
                   f"{report.seconds:.0f} s", show_header=False, title_justify="left")
    faults.add_column(style="bold")
    faults.add_column()
    faults.add_row("records failed by injected transient errors",
                   f"{report.records_failed_by_injection} of {report.deliveries} deliveries "
                   f"({report.records_failed_by_injection / max(report.deliveries, 1):.1%})")
    faults.add_row("invocations timed out / crashed after publishing half",
                   f"{timeouts} / {crashes} of {report.invocations} ({timeouts / max(report.invocations, 1):.1%} / "
                   f"{crashes / max(report.invocations, 1):.1%}); in-progress claims released: {report.claims_expired}")
    faults.add_row("duplicate deliveries", f"{report.duplicates_delivered} ({report.duplicates_delivered / report.events:.1%} "
                   f"of events); skipped as duplicates: {report.duplicates_skipped}")
    console.print(faults)
    ledger = Table(title="ledger: where every event ended up", title_justify="left")
    for column in ("", "processed exactly once", "in the DLQ", "processed twice", "lost", "also in the DLQ, processed",
                   "balanced"):
        ledger.add_column(column, justify="right")
    rows = [("after the faults", report.ledger)] + ([("after redrive", report.after_redrive)] if report.after_redrive else [])
    for name, entry in rows:
        ok = entry.balanced(report.events)
        ledger.add_row(name, str(entry.processed_once), str(entry.in_dead_letter_queue), str(entry.processed_twice),
                       str(entry.lost), str(entry.dead_lettered_after_processing),
                       "[green]yes[/green]" if ok else "[red]NO[/red]")
    console.print(ledger)
    console.print(f"{report.ledger.processed_once} + {report.ledger.in_dead_letter_queue} = "
                  f"{report.ledger.processed_once + report.ledger.in_dead_letter_queue} of {report.events} events; "
                  f"{report.result_events} result events in all; {report.redriven} redriven")
    return 0 if report.balanced else 1


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def _reviews(args: argparse.Namespace) -> int:
    import boto3
    from rich.console import Console
    from rich.table import Table

    from .reviews import decide, list_reviews

    sqs = boto3.client("sqs")
    if args.action == "list":
        reviews = list_reviews(sqs, args.queue_url)
        table = Table(title=f"{len(reviews)} cases waiting for review", title_justify="left")
        for column in ("transaction", "risk", "customer", "requested", "timeout", "correlation id"):
            table.add_column(column)
        for review in reviews:
            if review.request is None:
                table.add_row(review.message["MessageId"], "?", "?", "?", "?", review.problem)
                continue
            case = review.request.case
            table.add_row(case.transaction_id, f"{case.risk_score:.3f}", f"{case.customer.id} ({case.customer.segment})",
                          case.requested_at.isoformat(timespec="seconds"), f"{case.timeout_s} s", case.correlationid)
        Console().print(table)
        return 0
    decision = decide(sqs, boto3.client("stepfunctions"), args.queue_url, args.transaction_id,
                      approve=args.action == "approve", reviewer=args.reviewer, note=args.note)
    print(json.dumps({"transaction_id": decision.transaction_id, "outcome": decision.outcome, "detail": decision.detail}))
    return 0 if decision.outcome in {"approved", "rejected"} else 1


def _in_range(low: int, high: int):  # noqa: ANN202 - an argparse type
    def parse(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be in [{low}, {high}], got {value}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    from .chaos import FaultRates  # light: the chaos module loads moto only when it runs

    parser = argparse.ArgumentParser(prog="inferbus", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run the whole pipeline embedded on moto and print what happened")
    demo.add_argument("--images", type=_in_range(1, 300), default=200,
                      help="held-out digits for the batched classifier, 1-300 (default 200)")
    demo.add_argument("--analyses", type=_in_range(0, 60), default=16,
                      help="held-out digits for the parallel vision workflow, 0-60 (default 16)")
    demo.add_argument("--texts", type=_in_range(0, 200), default=40,
                      help="held-out review sentences for the text pipeline, 0-200 (default 40)")
    demo.add_argument("--transactions", type=_in_range(0, 143), default=40,
                      help="held-out rows for risk scoring and review, 0-143 (default 40)")
    demo.add_argument("--duplicates", type=_in_range(0, 300), default=5,
                      help="image events to deliver a second time (default 5)")
    demo.add_argument("--json", action="store_true", help="print the summary as JSON")
    demo.set_defaults(run=_demo)
    send = commands.add_parser("send", help="put one event on a deployed bus (uses your AWS credentials)")
    send.add_argument("--bus", required=True, help="event bus name (stack output EventBusName)")
    kind = send.add_mutually_exclusive_group()
    kind.add_argument("--image", type=_in_range(0, 359), default=0,
                      help="ImageSubmitted: index of the held-out digit, 0-359 (default 0)")
    kind.add_argument("--text", help="TextSubmitted with this text (1-2,000 characters)")
    kind.add_argument("--transaction", type=_in_range(0, 142), help="TransactionSubmitted: index of the held-out row, 0-142")
    send.add_argument("--full", action="store_true", help="with --image: ask for the parallel vision workflow")
    send.add_argument("--segment", choices=["new", "returning"], default="returning",
                      help="with --transaction: the customer segment (default returning)")
    send.add_argument("--source", help="CloudEvents source (default inferbus.demo)")
    send.set_defaults(run=_send)
    redrive = commands.add_parser("redrive", help="show why DLQ messages failed, and move them back to their queue")
    redrive.add_argument("queue", help="the dead-letter queue, by URL or name (stack outputs ...DeadLetterQueueUrl)")
    redrive.add_argument("--source-url", help="the queue to move them back to (default: the one whose redrive policy "
                                              "names this DLQ)")
    redrive.add_argument("--dry-run", action="store_true", help="only show what would move and why each failed")
    redrive.add_argument("--all", action="store_true",
                         help="move every message, also those that would fail again (uses SQS StartMessageMoveTask)")
    redrive.set_defaults(run=_redrive)
    reviews = commands.add_parser("reviews", help="list high-risk cases waiting for a person; approve or reject one")
    actions = reviews.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="the cases on the manual-review queue (they stay there)")
    listing.add_argument("--queue-url", required=True, help="the review queue (stack output ReviewQueueUrl)")
    for action, verb in (("approve", "approve"), ("reject", "reject")):
        sub = actions.add_parser(action, help=f"{verb} one case: resumes its workflow, which emits ReviewCompleted")
        sub.add_argument("transaction_id", help="the case's transaction id (from 'reviews list')")
        sub.add_argument("--queue-url", required=True, help="the review queue (stack output ReviewQueueUrl)")
        sub.add_argument("--reviewer", default=os.environ.get("USER", "reviewer"), help="who decides (default $USER)")
        sub.add_argument("--note", help="why; carried in ReviewCompleted")
    reviews.set_defaults(run=_reviews)
    chaos = commands.add_parser("chaos", help="run the image pipeline embedded with faults on purpose; account for every event")
    chaos.add_argument("--events", type=_in_range(1, 100_000), default=5000, help="images to send (default 5000)")
    defaults = FaultRates()
    chaos.add_argument("--record-error-rate", type=_rate, default=defaults.record_error_rate,
                       help=f"share of claimed records failing transiently (default {defaults.record_error_rate})")
    chaos.add_argument("--timeout-rate", type=_rate, default=defaults.timeout_rate,
                       help=f"share of invocations timing out (default {defaults.timeout_rate})")
    chaos.add_argument("--crash-rate", type=_rate, default=defaults.crash_after_publish_rate,
                       help=f"share of invocations dying after publishing half their results "
                            f"(default {defaults.crash_after_publish_rate})")
    chaos.add_argument("--duplicate-rate", type=_rate, default=defaults.duplicate_rate,
                       help=f"share of processed records delivered twice (default {defaults.duplicate_rate})")
    chaos.add_argument("--latency-ms", type=float, default=0.0, help="added to every invocation (default 0)")
    chaos.add_argument("--batch-size", type=_in_range(1, 100), default=10, help="the classifier's SQS batch (default 10)")
    chaos.add_argument("--seed", type=int, default=7, help="for a repeatable run (default 7)")
    chaos.add_argument("--no-redrive", action="store_true", help="leave the DLQ as the faults left it")
    chaos.add_argument("--json", action="store_true", help="print the report as JSON")
    chaos.set_defaults(run=_chaos)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
