"""``inferbus``: run the pipeline embedded on moto, or send events to a deployed bus.

Examples
--------
    inferbus demo                                   # the whole pipeline on this laptop, no AWS account
    inferbus demo --count text-pipeline=100 --json  # more texts; machine-readable summary
    inferbus send --bus inferbus --sample image-classifier --index 3   # a held-out sample to a deployed stack
    inferbus send --bus inferbus --type TextSubmitted --data '{"text": "Great service."}'
    inferbus redrive DLQ_URL --dry-run                             # why each DLQ message failed
    inferbus reviews list --queue-url URL                        # cases waiting for a person
    inferbus reviews approve TXN_ID --queue-url URL --note "..."   # resume its workflow
    inferbus chaos --events 5000                    # faults on purpose, then a ledger of every event (embedded)
    inferbus new consumer iris-classifier --model iris.onnx --event IrisSubmitted   # add your own model
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


def _run_and_report(command: str, run: Callable[..., Any], options: dict[str, Any], show: Callable[[Any], None],
                    as_json: bool, refused: type[Exception]) -> int:
    """Run an embedded experiment; print its report as JSON or for people; exit 0 only if it balances."""
    try:
        if as_json:
            report = run(**options)
            print(json.dumps(report.as_dict(), indent=2))
        else:
            report = _with_progress(lambda progress: run(**options, progress=progress))
            show(report)
    except refused as error:
        print(f"inferbus {command}: {error}", file=sys.stderr)
        return 2
    return 0 if report.balanced else 1


def _demo(args: argparse.Namespace) -> int:
    from .demo import DemoInputError, run_demo
    from .demo.summary import print_summary

    options = dict(counts=dict(args.count), duplicates=dict(args.duplicates))
    return _run_and_report("demo", run_demo, options, print_summary, args.json, DemoInputError)


def _send(args: argparse.Namespace) -> int:
    import boto3
    from inferbus_lambda.contracts import data_model, known_event_types, new_event, to_put_events_entry
    from pydantic import ValidationError
    from pipeline import load_pipeline

    from .demo import DEMO_SOURCE, DemoInputError, sample_event

    source = args.source or DEMO_SOURCE
    truth = None
    try:
        if args.sample is not None:
            event, truth = sample_event(load_pipeline().component(args.sample), args.index, source=source)
        else:
            model = data_model(args.type)
            if model is None:
                print(f"inferbus send: no contract defines {args.type!r}; known: {', '.join(known_event_types())}",
                      file=sys.stderr)
                return 2
            event = new_event(model.model_validate_json(args.data), source=source)
    except (KeyError, DemoInputError) as error:
        print(f"inferbus send: {error.args[0]}", file=sys.stderr)
        return 2
    except ValidationError as error:
        print(f"inferbus send: not sent, the event breaks its contract: {error.errors(include_url=False)[0]['msg']}",
              file=sys.stderr)
        return 2
    response = boto3.client("events").put_events(Entries=[to_put_events_entry(event, args.bus)])
    print(json.dumps({"id": event.id, "type": event.type, "true_answer": truth, "response": response["Entries"]}, default=str))
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
    from .chaos import ChaosError, FaultRates, run_chaos
    from .chaos.report import print_chaos_report

    rates = FaultRates(record_error_rate=args.record_error_rate, timeout_rate=args.timeout_rate,
                       crash_after_publish_rate=args.crash_rate, crash_before_complete_rate=args.crash_before_complete_rate,
                       claim_throttle_rate=args.claim_throttle_rate, complete_throttle_rate=args.complete_throttle_rate,
                       duplicate_rate=args.duplicate_rate, latency_ms=args.latency_ms)
    options = dict(events=args.events, rates=rates, consumer=args.consumer, seed=args.seed, redrive=not args.no_redrive,
                   batch_size=args.batch_size)
    return _run_and_report("chaos", run_chaos, options, print_chaos_report, args.json, ChaosError)


def _docs(args: argparse.Namespace) -> int:
    from pipeline import load_pipeline

    from .reference import README, update_readme

    current = update_readme(load_pipeline(), check=args.check)
    if args.check and not current:
        print(f"inferbus docs: {README.name}'s event table is out of date; run `inferbus docs` to rewrite it", file=sys.stderr)
        return 1
    print(f"{README.name}: event table {'is current' if current else 'rewritten from the contracts and pipeline/'}")
    return 0


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


def _component_number(text: str) -> tuple[str, int]:
    name, sep, number = text.partition("=")
    if not sep or not number.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected COMPONENT=N, got {text!r}")
    return name.strip(), int(number)


def build_parser() -> argparse.ArgumentParser:
    from .chaos import FaultRates  # light: the chaos module loads moto only when it runs

    parser = argparse.ArgumentParser(prog="inferbus", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run the whole pipeline embedded on moto and print what happened",
                                description="Sends every declared component's held-out samples (pipeline/), with "
                                "malformed copies and duplicate deliveries, through the pipeline embedded on moto, "
                                "and accounts for every event.")
    demo.add_argument("--count", type=_component_number, action="append", default=[], metavar="COMPONENT=N",
                      help="samples to send to a component (default: its declaration's demo count); repeatable")
    demo.add_argument("--duplicates", type=_component_number, action="append", default=[], metavar="COMPONENT=N",
                      help="samples to deliver a second time (default: its declaration's); repeatable")
    demo.add_argument("--json", action="store_true", help="print the summary as JSON")
    demo.set_defaults(run=_demo)
    send = commands.add_parser("send", help="put one event on a deployed bus (uses your AWS credentials)")
    send.add_argument("--bus", required=True, help="event bus name (stack output EventBusName)")
    kind = send.add_mutually_exclusive_group(required=True)
    kind.add_argument("--sample", metavar="COMPONENT", help="a held-out demo sample of this component (pipeline/)")
    kind.add_argument("--type", help="an event of this type, its data given by --data")
    send.add_argument("--index", type=_in_range(0, 100_000), default=0, help="with --sample: which sample (default 0)")
    send.add_argument("--data", default="{}", help="with --type: the event's data, as JSON")
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
    chaos = commands.add_parser("chaos", help="run a consumer embedded with faults on purpose; account for every event")
    chaos.add_argument("--consumer", help="a declared consumer (default: the first with demo samples)")
    chaos.add_argument("--events", type=_in_range(1, 100_000), default=5000, help="events to send (default 5000)")
    defaults = FaultRates()
    chaos.add_argument("--record-error-rate", type=_rate, default=defaults.record_error_rate,
                       help=f"share of claimed records failing transiently (default {defaults.record_error_rate})")
    chaos.add_argument("--timeout-rate", type=_rate, default=defaults.timeout_rate,
                       help=f"share of invocations timing out (default {defaults.timeout_rate})")
    chaos.add_argument("--crash-rate", type=_rate, default=defaults.crash_after_publish_rate,
                       help=f"share of invocations dying after publishing half their results "
                            f"(default {defaults.crash_after_publish_rate})")
    chaos.add_argument("--crash-before-complete-rate", type=_rate, default=defaults.crash_before_complete_rate,
                       help="share of invocations dying between publishing a group of results and completing its "
                            f"claims: those results may be published again (default {defaults.crash_before_complete_rate})")
    chaos.add_argument("--claim-throttle-rate", type=_rate, default=defaults.claim_throttle_rate,
                       help=f"share of claim requests DynamoDB throttles (default {defaults.claim_throttle_rate})")
    chaos.add_argument("--complete-throttle-rate", type=_rate, default=defaults.complete_throttle_rate,
                       help="share of completion and release requests DynamoDB throttles "
                            f"(default {defaults.complete_throttle_rate})")
    chaos.add_argument("--duplicate-rate", type=_rate, default=defaults.duplicate_rate,
                       help=f"share of processed records delivered twice (default {defaults.duplicate_rate})")
    chaos.add_argument("--latency-ms", type=float, default=0.0, help="added to every invocation (default 0)")
    chaos.add_argument("--batch-size", type=_in_range(1, 100), default=10, help="the consumer's SQS batch (default 10)")
    chaos.add_argument("--seed", type=int, default=7, help="for a repeatable run (default 7)")
    chaos.add_argument("--no-redrive", action="store_true", help="leave the DLQ as the faults left it")
    chaos.add_argument("--json", action="store_true", help="print the report as JSON")
    chaos.set_defaults(run=_chaos)
    docs = commands.add_parser("docs", help="rewrite the README's event table from the contracts and pipeline/")
    docs.add_argument("--check", action="store_true", help="only check that it is current (exit 1 if not)")
    docs.set_defaults(run=_docs)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
