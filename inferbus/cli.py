"""``inferbus``: run the pipeline embedded on moto, or send events to a deployed bus.

Examples
--------
    inferbus demo                                   # the whole pipeline on this laptop, no AWS account
    inferbus demo --count text-pipeline=100 --json  # more texts; machine-readable summary
    inferbus send --bus inferbus --sample image-classifier --index 3   # a held-out sample to a deployed stack
    inferbus send --bus inferbus --type TextSubmitted --data '{"text": "Great service."}'
    inferbus redrive DLQ_URL --dry-run                             # why each DLQ message failed
    inferbus redrive --list                                        # every consumer's failure queue, any channel
    inferbus reviews list --queue-url URL                        # cases waiting for a person
    inferbus reviews approve TXN_ID --queue-url URL --note "..."   # resume its workflow
    inferbus chaos --flow all --events 5000         # faults on purpose, then a ledger per flow (embedded)
    inferbus serve                                  # the embedded pipeline at http://localhost:4566 for any AWS client
    inferbus invoke image-classifier --event batch.json   # one function, one event: its result and logs
    inferbus rules test '{"source": ["a"]}' event.json   # would EventBridge match this event? (exit 0 yes, 1 no)
    inferbus new consumer iris-classifier --model iris.onnx --event IrisSubmitted   # add your own model
    inferbus new workflow order-check --event OrderSubmitted                         # add a workflow skeleton
    inferbus send --bus inferbus --event events.jsonl --profile prod   # your own events, validated first
    inferbus replay --since 2026-12-01T10:00 --until 2026-12-01T11:00 --type ImageSubmitted   # from the archive
    inferbus diagram                                # the topology, from the synthesized template
    inferbus schemas ImageSubmitted                 # the JSON Schema of an event type

Every command that talks to AWS takes --profile, --region and --endpoint-url. An error is one
line on stderr saying what to do (exit 2: fix the command; 1: it ran and failed); --debug
shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .cli_support import (
    FAILED,
    CommandError,
    OneLineParser,
    add_aws_options,
    aws_client,
    ignore_interrupted_jsii,
    print_json,
    print_records,
    progress_reporter,
    run_command,
)

PROG = "inferbus"
DIAGRAM_STEM = "docs/images/topology"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("inferbus")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _run_and_report(command: str, run: Callable[..., Any], options: dict[str, Any], show: Callable[[Any], None],
                    as_json: bool, refused: type[Exception]) -> Any:
    """Run an embedded experiment with progress on stderr; print its report as JSON or for people."""
    try:
        report = progress_reporter(f"{PROG} {command}", lambda progress: run(**options, progress=progress))
    except refused as error:
        raise CommandError(str(error)) from None
    if as_json:
        print_json(report.as_dict())
    else:
        show(report)
    return report


def _demo(args: argparse.Namespace) -> int:
    from .demo import DemoInputError, run_demo
    from .demo.summary import print_summary

    options = dict(counts=dict(args.count), duplicates=dict(args.duplicates), replay=args.replay,
                   context=dict(args.context))
    report = _run_and_report("demo", run_demo, options, print_summary, args.json, DemoInputError)
    if args.report is not None:
        from .demo.document import write_report

        path = write_report(report, Path(args.report))
        print(f"{PROG} demo: report written to {path}", file=sys.stderr)
    return 0 if report.balanced else 1


def _read_events(source: str) -> list[tuple[str, Any]]:
    """``(where, JSON value)`` of each event in a file (``-``: stdin): one JSON object, a JSON array, or JSON Lines."""
    name = "stdin" if source == "-" else source
    text = sys.stdin.read() if source == "-" else Path(source).read_text()
    if not text.strip():
        raise CommandError(f"{name}: no events in it; give one CloudEvent as JSON, or one per line (JSON Lines)")
    whole, not_json = _json_document(text, name)
    if not_json is None:
        if isinstance(whole, list):
            return [(f"{name} item {number}", event) for number, event in enumerate(whole, start=1)]
        return [(name, whole)]
    events = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        event, not_json = _json_document(line, f"{name} line {number}")
        if not_json is not None:
            raise CommandError(f"{name} line {number}: not JSON ({not_json.msg}, column {not_json.colno}); "
                               "nothing was sent")
        events.append((f"{name} line {number}", event))
    return events


def _json_document(text: str, where: str) -> tuple[Any, json.JSONDecodeError | None]:
    """``(value, None)`` for one JSON document, read strictly; ``(None, why)`` for text that is not one
    JSON document (JSON Lines, or not JSON at all). JSON the strict reader refuses is a one-line error."""
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        return None, error
    except (ValueError, RecursionError):
        pass  # JSON too big for Python's reader (a 5,000-digit number, deep nesting): the strict reader says why
    return _strict_json(text, where), None


def _strict_json(text: str, where: str) -> Any:
    """``text`` read as strict JSON (repeated keys, NaN, lone surrogates refused), as every consumer reads it."""
    from inferbus_lambda.contracts import InvalidEventError, loads_strict

    try:
        return loads_strict(text, where)
    except InvalidEventError as error:
        raise CommandError(f"{error.reason}; nothing was sent") from None


def _events_to_send(args: argparse.Namespace) -> list[tuple[Any, Any]]:
    """``(CloudEvent, true answer or None)`` for what ``send`` was asked to send, every one validated."""
    from inferbus_lambda.contracts import (
        InvalidEventError,
        data_model,
        known_event_types,
        loads_strict,
        new_event,
        parse_event,
    )
    from pydantic import ValidationError

    from pipeline import load_pipeline

    from .demo import DEMO_SOURCE, DemoInputError, sample_event

    if args.event is not None:
        checked = []
        for where, raw in _read_events(args.event):
            try:
                checked.append((parse_event(raw), None))
            except InvalidEventError as error:
                raise CommandError(f"{where}: not sent, it breaks its contract: {error}; nothing was sent") from None
        return checked
    source = args.source or DEMO_SOURCE
    if args.sample is not None:
        try:
            return [sample_event(load_pipeline().component(args.sample), args.index, source=source)]
        except (KeyError, DemoInputError) as error:
            raise CommandError(error.args[0]) from None
    model = data_model(args.type)
    if model is None:
        raise CommandError(f"no contract defines {args.type!r}; known: {', '.join(known_event_types())}")
    try:
        return [(new_event(model.model_validate(loads_strict(args.data, "--data")), source=source), None)]
    except InvalidEventError as error:
        raise CommandError(f"not sent: {error.reason}") from None
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CommandError(f"not sent, the event breaks its contract: {where + ': ' if where else ''}{first['msg']}") from None


def _send(args: argparse.Namespace) -> int:
    from inferbus_lambda.contracts import to_put_events_entry
    from inferbus_lambda.publishing import publish_events

    events = _events_to_send(args)
    failures = publish_events(aws_client(args, "events"), [to_put_events_entry(event, args.bus) for event, _ in events])
    failed = {failure.index: failure for failure in failures}
    print_json({
        "bus": args.bus,
        "sent": [{"id": event.id, "type": event.type, "true_answer": truth}
                 for index, (event, truth) in enumerate(events) if index not in failed],
        "failed": [{"id": events[index][0].id, "error": f.error_code, "message": f.error_message}
                   for index, f in sorted(failed.items())],
    }, indent=None)
    if failed:
        print(f"{PROG} send: PutEvents refused {len(failed)} of {len(events)} events (listed under \"failed\")",
              file=sys.stderr)
    return 1 if failed else 0


def _declared_consumers(stage: str | None) -> tuple[Any, ...]:
    """The consumers of ``stage`` (its own declarations: ``infra/stages/<stage>.py``), else the project's
    (a broker-fed consumer's DLQ is found by them); none outside a project."""
    if stage:
        from infra.stages import STAGES, stage_pipeline

        if stage not in STAGES:
            raise CommandError(f"--stage {stage}: no infra/stages/{stage}.py (stages with declarations of their own: "
                               f"{', '.join(sorted(STAGES)) or 'none'})")
        return stage_pipeline(STAGES[stage]).consumers
    try:
        from pipeline import load_pipeline
    except ImportError:
        return ()
    return load_pipeline().consumers


def _stack_outputs(args: argparse.Namespace, stack_name: str) -> dict[str, str]:
    """The outputs of ``stack_name`` and of its nested stacks (in AWS a component's outputs are on its nested stack)."""
    cloudformation = aws_client(args, "cloudformation")
    (root,) = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    stacks = [root] + [stack for page in cloudformation.get_paginator("describe_stacks").paginate()
                       for stack in page["Stacks"] if stack.get("RootId") == root["StackId"]]
    return {output["OutputKey"]: output["OutputValue"] for stack in stacks for output in stack.get("Outputs", [])}


def _list_failure_queues(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .model.settings import InferbusSettings
    from .redrive import RedriveError, failure_queues

    stack_name = args.stack or InferbusSettings().staged(InferbusSettings().stack_name)
    try:
        queues = failure_queues(aws_client(args, "sqs"), _declared_consumers(args.stage), _stack_outputs(args, stack_name),
                                broker_url=args.broker_url, bootstrap_servers=args.bootstrap_servers)
    except RedriveError as error:
        raise CommandError(str(error)) from None
    if args.json:
        print_json([{"consumer": q.consumer, "channel": q.channel.value, "dead_letter_queue": q.url, "messages": q.messages,
                     "goes_back_to": q.goes_back_to} for q in queues])
        return 0
    print_records(Console(), f"{len(queues)} failure queues in {stack_name}",
                  [(q.url, [("consumer", q.consumer), ("channel", q.channel.value), ("messages", str(q.messages)),
                            ("goes back to", q.goes_back_to)]) for q in queues])
    return 0


def _redrive(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .redrive import RedriveError, inspect_dead_letters, redrive, resolve_target

    if args.list:
        return _list_failure_queues(args)
    if not args.queue:
        raise CommandError("name the dead-letter queue (a ...DeadLetterQueueUrl output), or --list them")
    sqs = aws_client(args, "sqs")
    try:
        dlq_url, target = resolve_target(sqs, args.queue, _declared_consumers(args.stage), source_url=args.source_url,
                                         broker_url=args.broker_url, bootstrap_servers=args.bootstrap_servers,
                                         lambda_client=lambda: aws_client(args, "lambda"))
    except RedriveError as error:
        raise CommandError(str(error)) from None
    source_url = target.describe()
    letters = inspect_dead_letters(sqs, dlq_url)
    movable = len(letters) if args.all else sum(letter.valid for letter in letters)
    moved = None if args.dry_run else redrive(sqs, dlq_url, target, only_valid=not args.all)
    if args.json:
        print_json({"dead_letter_queue": dlq_url, "source_queue": source_url, "dry_run": args.dry_run,
                    "messages": [{"event_id": letter.event_id, "receives": letter.receive_count, "last_reason": letter.last_reason,
                                  "verdict": letter.verdict}
                                 for letter in letters],
                    "would_move": movable, "moved": moved, "move_task_started": moved == -1,
                    "not_moved": target.problems})
        return 0
    print_records(Console(), f"{len(letters)} messages in {dlq_url.rsplit('/', 1)[-1]}",
                  [(letter.event_id or "? (no event id)", [("receives", str(letter.receive_count)),
                                                          ("last reason", letter.last_reason), ("verdict", letter.verdict)])
                   for letter in letters])
    if moved is None:
        print(f"dry run: would move {movable} of {len(letters)} to {source_url}")
    else:
        print("started an SQS message move task for every message" if moved < 0 else f"moved {moved} of {len(letters)}")
    for problem in target.problems:
        print(f"kept: {problem}")
    return 0


def _chaos(args: argparse.Namespace) -> int:
    from dataclasses import fields

    from .chaos import ChaosError, FaultRates, run_chaos
    from .chaos.report import print_chaos_report

    rates = FaultRates(**{rate.name: getattr(args, rate.name) for rate in fields(FaultRates)})  # a flag per rate
    stores = ("dynamodb", "redis") if args.claims_store == "both" else (args.claims_store,) if args.claims_store else None
    options = dict(events=args.events, rates=rates, flow=args.flow, seed=args.seed, redrive=not args.no_redrive,
                   batch_size=args.batch_size, claims_stores=stores, context=dict(args.context), rate=args.rate)
    report = _run_and_report("chaos", run_chaos, options, print_chaos_report, args.json, ChaosError)
    return 0 if report.balanced else 1


def _docs(args: argparse.Namespace) -> int:
    from pipeline import load_pipeline

    from .costs import OPERATIONS, update_operations
    from .reference import README, update_readme
    from .template import synthesize_stacks

    pipeline = load_pipeline()
    current = update_readme(pipeline, check=args.check)
    if args.check and not current:
        raise CommandError(f"{README.name}'s event table or table of flows is out of date; run `inferbus docs` to "
                           "rewrite them", exit_code=1)
    print(f"{README.name}: event table and table of flows "
          f"{'are current' if current else 'rewritten from the contracts, pipeline/ and models/manifest.json'}")
    stacks = synthesize_stacks(pipeline=pipeline)
    costs_current = update_operations(stacks.root, stacks.nested, pipeline, check=args.check)
    if args.check and not costs_current:
        raise CommandError(f"{OPERATIONS.name}'s cost table is out of date; run `inferbus docs` to rewrite it", exit_code=1)
    print(f"{OPERATIONS.name}: cost table {'is current' if costs_current else 'rewritten from the synthesized stacks'}")
    return 0


def _schemas(args: argparse.Namespace) -> int:
    from inferbus.model.schemas import SCHEMA_DIR, event_schemas, stale_schemas, write_schemas

    schemas = event_schemas()
    if args.write or args.check:
        stale = stale_schemas(schemas)
        if args.check:
            if stale:
                raise CommandError(f"{', '.join(stale)} out of date in {SCHEMA_DIR}; run `inferbus schemas --write`",
                                   exit_code=1)
            print(f"{len(schemas)} schemas in {SCHEMA_DIR} are current")
            return 0
        write_schemas(schemas)
        print(f"wrote {len(schemas)} schemas to {SCHEMA_DIR} ({len(stale)} changed)")
        return 0
    unknown = sorted(set(args.type) - set(schemas))
    if unknown:
        raise CommandError(f"no contract defines {', '.join(unknown)}; known: {', '.join(schemas)}")
    chosen = {name: schemas[name] for name in (args.type or schemas)}
    print_json(chosen[args.type[0]] if len(args.type) == 1 else chosen)
    return 0


def _diagram(args: argparse.Namespace) -> int:
    from .diagram import ARCHITECTURE, mermaid, topology, update_architecture, write_diagram

    context = dict(args.context)
    graph = topology(context=context)
    written = write_diagram(graph, Path(args.out), image_format=args.format)
    if args.out == DIAGRAM_STEM and not context:  # the default diagram is the one docs/architecture.md shows
        update_architecture(mermaid(graph), check=False, page_count=len(written) - 1)
        written.append(ARCHITECTURE)
    if args.json:
        print_json({"files": [str(path) for path in written], "nodes": len(graph.nodes), "edges": len(graph.edges)})
    else:
        print("\n".join(str(path) for path in written))
    return 0


def _replay(args: argparse.Namespace) -> int:
    from .replay import ReplayError, start_replay, wait_for_replay

    events = aws_client(args, "events")
    try:
        replay = start_replay(events, bus_name=args.bus, since=args.since, until=args.until, event_types=args.type,
                              archive_name=args.archive, name=args.name)
    except ReplayError as error:
        raise CommandError(str(error)) from None
    state = wait_for_replay(events, replay["name"]) if args.wait else replay["state"]
    replay["state"] = state
    if args.json:
        print_json(replay)
    else:
        print(f"replay {replay['name']}: {state}: {replay['archive']} events from {replay['since']} to {replay['until']} "
              f"-> {args.bus}" + (f", rules {', '.join(replay['rules'])}" if replay["rules"] else ", every rule"))
        if not args.wait:
            print(f"follow it: aws events describe-replay --replay-name {replay['name']}")
    return 0 if state not in ("FAILED", "CANCELLED") else 1


def _kafka_topic(args: argparse.Namespace) -> Any:
    """``--topic`` and its cluster as a KafkaTopic (checked by it: one line naming what to fix), for ``--channel kafka``."""
    from .model.declarations import DeclarationError
    from .model.kafka import KafkaTopic

    given = {"topic": args.topic, "cluster_arn": args.cluster_arn, "secret_arn": args.secret_arn,
             "bootstrap_servers": tuple(args.bootstrap_servers.split(",")) if args.bootstrap_servers else ()}
    if args.channel != "kafka":
        named = [f"--{name.replace('_', '-')}" for name, value in given.items() if value]
        if named:
            raise CommandError(f"{', '.join(named)}: only for --channel kafka")
        return None
    if not args.topic:
        raise CommandError("--channel kafka needs --topic NAME and --cluster-arn ARN (Amazon MSK) or "
                           "--bootstrap-servers HOST:PORT,... --secret-arn ARN (self-managed)")
    try:
        return KafkaTopic(**given)
    except DeclarationError as error:
        raise CommandError(str(error)) from None


def _new(args: argparse.Namespace) -> int:
    from .scaffold import ScaffoldError, new_consumer, new_workflow

    try:
        if args.kind == "consumer":
            written = new_consumer(args.name, Path(args.model), args.event, args.result,
                                   Path(args.samples) if args.samples else None, task=args.task, labels=args.labels,
                                   channel=args.channel, group_by=args.group_by, broker=_kafka_topic(args),
                                   queue=args.queue)
        else:
            written = new_workflow(args.name, args.event, args.result, steps=tuple(args.steps.split(",")))
    except ScaffoldError as error:
        raise CommandError(str(error)) from None
    width = max(len(path) for path, _ in written.files)
    print(f"inferbus new {args.kind}: wrote {written.component}")
    for path, what in written.files:
        print(f"  {path:<{width}}  {what}")
    for note in written.notes:
        print(f"  note: {note}")
    print("Next:")
    for number, step in enumerate(written.next_steps, start=1):
        print(f"  {number}. {step}")
    return 0


def _models_add(args: argparse.Namespace) -> int:
    from .scaffold import ScaffoldError, add_model, parse_scores

    try:
        added = add_model(Path(args.path), args.name, samples=Path(args.samples) if args.samples else None,
                          scores=parse_scores(args.scores), data=args.data, replace=args.replace)
    except ScaffoldError as error:
        raise CommandError(str(error)) from None
    if args.json:
        print_json({"name": added.name, "file": added.file, "replaced": added.replaced, "entry": added.entry,
                    "notes": list(added.notes)})
        return 0
    bench = added.entry["benchmark"]
    print(f"inferbus models add: {'replaced' if added.replaced else 'added'} {added.name} "
          f"(version {added.entry['version']}) -> {added.file}")
    print(f"  sha256 {added.entry['sha256']}, {added.entry['bytes']:,} bytes")
    for side in ("inputs", "outputs"):
        print(f"  {side}: " + ", ".join(f"{io['name']} {io['dtype']} {io['shape']}" for io in added.entry[side]))
    print("  benchmark: " + ", ".join(f"batch {key.split('_')[1]} {value} ms" for key, value in bench.items()
                                      if key.endswith("_ms_median"))
          + f" (median of {bench['runs']}, {bench['cpu']})")
    for note in added.notes:
        print(f"  note: {note}")
    print(f"Next: name it in a declaration's models=(\"{added.name}\",), or write a consumer for it: "
          f"inferbus new consumer NAME --model {added.file} --event TYPE")
    return 0


MODELS_ADD_HELP = """\
Checks an ONNX model against what the kit runs, then records it:
  - onnxruntime opens it; every input is a float, int or string tensor, every input and
    output has a dynamic first (batch) dimension, and a batch of 32 rows gives 32 rows back
  - copies it to models/<name>.onnx and writes models/manifest.json -> models.<name>: sha256,
    bytes, inputs, outputs, a benchmark (median ms per batch of 1 and of 32 with onnxruntime
    on this machine, the CPU named), metrics.holdout_<metric> from --scores, measured on --data
From PyTorch: torch.onnx.export(module, example, "m.onnx", input_names=["x"], output_names=["y"],
dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}); see docs/extending.md.
"""


NEW_CONSUMER_HELP = """\
Writes a queue consumer for your ONNX model: rule -> SQS queue (+ DLQ) -> Lambda running ONE
batched inference per SQS batch -> result events on the bus. From the model's graph it writes
  models/<model>.onnx + its manifest entry (sha256, inputs, outputs, labels; accuracy to record)
  functions/inferbus_lambda/contracts/<name>.py  the event contracts (input unless TYPE exists, result)
  functions/<name>/handler.py                    infer(): ONE session.run per batch
  pipeline/<name>.py                             the declaration, with demo samples
  tests/functional/test_<name>.py                runs it embedded on moto (no AWS)
It never overwrites a file; on any error nothing is written.

Graphs it maps: float/int tensor inputs [N, k] (or [N, None] with --samples, or [N, d1, d2...]
flattened), string inputs [N, 1]; classifiers (label + probabilities tensor or ZipMap),
classifiers that end in logits or scores (one float output [N, K]: softmax in numpy, results
carry label, probability and scores), regressors (one float output), anything else with one row
per input (one field per output). One float output [N, K] is read as class scores when its
name, its last node (Softmax, Sigmoid), rows that sum to 1 or the samples' labels say so, else
as K regression targets; a line says which, and --task changes it.

--samples FILE (held-out rows, copied into models/ and listed in the manifest):
  .npz    an array per input named like it (one input: 'inputs'), optional 'labels'
  .csv    a row per sample; a header with a 'label' column marks the labels
  .jsonl  an object per line: {"<field or input name>": [...], "label": ...}
Without it the demo sends seeded random inputs (replace them). A classifier's accuracy on the
rows that carry labels is measured and written to the manifest. Afterwards the generated docs
(README event table, docs/schemas/, topology diagram) are rewritten, as make docs does.
See docs/extending.md.
"""

NEW_WORKFLOW_HELP = """\
Writes a Step Functions workflow skeleton that runs as written:
  statemachines/<name>.asl.json     your states only: one Lambda task per step, in order, then
                                    publish the result; every failure -> EmitFailure; retries
                                    with backoff and jitter. At synth the kit adds Accept, the
                                    route (accepted/duplicate/rejected) and the failure path
                                    (a <Name>Failed event -> Fail)
  functions/<name>/<step>.py        each step (step_handler): replace <step>() with your work
  functions/inferbus_lambda/contracts/<name>.py  <Name>Failed, and the input/result types if new
  pipeline/<name>.py                the declaration (trigger, a Task per step, demo samples)
  tests/functional/test_<name>.py   runs it embedded on moto (no AWS)
A TYPE another component publishes (e.g. RiskScored) is accepted only from that component.
See docs/extending.md.
"""


def _template(argument: str | None) -> dict[str, Any] | None:
    """``--template``: a synthesized template file (a root stack read with its nested stacks), or its JSON inline;
    ``None`` when not given (the command synthesizes the app)."""
    from .runtime.nested_stacks import read_flattened

    if argument is None:
        return None
    try:
        path = Path(argument.removeprefix("@"))
        return read_flattened(path) if path.is_file() else json.loads(_text_or_file(argument))
    except (OSError, ValueError) as error:
        raise CommandError(f"cannot read the template {argument}: {error}") from None


def _serve(args: argparse.Namespace) -> int:
    from .serve import ServeError, serve

    try:
        retention = {} if args.retention is None else {"retention_s": args.retention}  # None: serve's default
        serve(port=args.port, host=args.host, template=_template(args.template), as_json=args.json, **retention)
    except ServeError as error:
        raise CommandError(str(error)) from None
    return 0


def _invoke(args: argparse.Namespace) -> int:
    from .invoke import InvokeError, invoke_function

    text = sys.stdin.read() if args.event == "-" else _text_or_file(args.event)
    try:
        event = json.loads(text)
    except ValueError as error:
        raise CommandError(f"--event {args.event}: not JSON ({error})") from None
    try:
        invoked = invoke_function(args.function, event, template=_template(args.template))
    except InvokeError as error:
        raise CommandError(str(error)) from None
    invocation = invoked.invocation
    if invoked.wrapped is not None:
        print(f"inferbus invoke: note: --event {args.event} is {invoked.wrapped}", file=sys.stderr)
    for line in invocation.logs:  # the function's own log lines, as CloudWatch Logs would hold them
        print(json.dumps(line, default=str), file=sys.stderr)
    print(f"REPORT {invoked.name} ({invoked.logical_id}) RequestId: {invocation.request_id} "
          f"Duration: {invocation.duration_ms:.1f} ms", file=sys.stderr)
    if invocation.error is not None:  # what the Invoke API returns for an unhandled error
        print_json({"errorType": invocation.error_type, "errorMessage": invocation.error_message,
                    "stackTrace": invocation.stack_trace}, indent=None if args.compact else 2)
        return FAILED
    print_json(invoked.response, indent=None if args.compact else 2)
    return 0


def _text_or_file(argument: str) -> str:
    """An argument given inline, or ``@path`` / a path to a file holding it."""
    if argument.lstrip().startswith(("{", "[")):
        return argument
    path = Path(argument.removeprefix("@"))
    if not path.is_file():
        raise CommandError(f"{path}: no such file (give the JSON inline, or the path of a file holding it)")
    return path.read_text()


# TestEventPattern requires these fields of the event, as EventBridge sends it.
REQUIRED_EVENT_FIELDS = ("id", "account", "source", "time", "region", "resources", "detail-type")


def _rules_test(args: argparse.Namespace) -> int:
    from event_patterns import PatternError, compile_pattern

    try:
        pattern, event = (json.loads(_text_or_file(text)) for text in (args.pattern, args.event))
    except (OSError, ValueError) as error:
        raise CommandError(f"not JSON (give it inline, or a file path): {error}") from None
    try:
        compiled = compile_pattern(pattern)
    except PatternError as error:
        raise CommandError(f"EventBridge would refuse this pattern: {error}") from None
    missing = [name for name in REQUIRED_EVENT_FIELDS if not isinstance(event, dict) or name not in event]
    if missing:
        raise CommandError(f"the event lacks {', '.join(missing)} (give it as EventBridge delivers it: "
                           f"{', '.join(REQUIRED_EVENT_FIELDS)}, detail)")
    matched = compiled.matches(event)
    print(json.dumps({"Result": matched}) if args.json else ("match" if matched else "no match"))
    return 0 if matched else 1


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def _events_per_second(text: str) -> float:
    """A consumer's ``max_events_per_second``, checked where the setting is (one range, one message)."""
    from .model.settings import ConsumerSettings, SettingsError

    try:
        value = float(text)
        ConsumerSettings(max_events_per_second=value)
    except ValueError as error:  # SettingsError is one
        raise argparse.ArgumentTypeError(str(error) if isinstance(error, SettingsError) else
                                         f"expected events per second, got {text!r}") from None
    return value


def _seed(args: argparse.Namespace) -> int:
    from pipeline import load_pipeline

    from .state_seed import REPO_ROOT, SeedError, read_seed, seed_table

    tables = {table.name: table for table in load_pipeline().state_tables}
    if args.name not in tables:
        raise CommandError(f"no consumer reads a state table named {args.name!r} (declared: {', '.join(tables) or 'none'})")
    path = args.file or (tables[args.name].seed and REPO_ROOT / tables[args.name].seed)
    if not path:
        raise CommandError(f"state table {args.name!r} declares no seed: give the items with --file FILE.jsonl")
    try:
        written = seed_table(aws_client(args, "dynamodb"), args.table, read_seed(Path(path)))
    except SeedError as error:
        raise CommandError(str(error)) from None
    print(f"{args.table}: wrote {written} items from {path}")
    return 0


def _reviews(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .reviews import decide, list_reviews

    sqs = aws_client(args, "sqs")
    if args.action == "list":
        reviews = list_reviews(sqs, args.queue_url)
        if args.json:
            print_json([review.request.case.model_dump(mode="json") if review.request else
                        {"message_id": review.message["MessageId"], "problem": review.problem} for review in reviews])
            return 0
        records = []
        for review in reviews:
            if review.request is None:
                records.append((f"message {review.message['MessageId']}", [("problem", review.problem)]))
                continue
            case = review.request.case
            records.append((case.transaction_id, [
                ("risk", f"{case.risk_score:.3f}"), ("customer", f"{case.customer.id} ({case.customer.segment})"),
                ("requested", case.requested_at.isoformat(timespec="seconds")), ("timeout", f"{case.timeout_s} s"),
                ("correlation id", case.correlationid)]))
        print_records(Console(), f"{len(reviews)} cases waiting for review (approve or reject one by its transaction id)",
                      records)
        return 0
    decision = decide(sqs, aws_client(args, "stepfunctions"), args.queue_url, args.transaction_id,
                      approve=args.action == "approve", reviewer=args.reviewer, note=args.note)
    decided = decision.outcome in {"approved", "rejected"}
    if args.json:
        print_json({"transaction_id": decision.transaction_id, "outcome": decision.outcome, "detail": decision.detail},
                   indent=None)
        return 0 if decided else FAILED
    if not decided:
        raise CommandError(f"{decision.transaction_id}: {decision.outcome}, {decision.detail}; see the waiting cases "
                           "with `inferbus reviews list --queue-url URL`", FAILED)
    print(f"{decision.transaction_id}: {decision.outcome}; its workflow resumes and emits ReviewCompleted")
    return 0


def _in_range(low: int, high: int):  # noqa: ANN202 - an argparse type
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be in [{low}, {high}], got {value}")
        return value

    return parse


DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def _duration_s(text: str) -> int:
    """An argparse type: a duration in seconds, or with a unit (``90s``, ``15m``, ``1h``, ``45d``)."""
    number, unit = (text[:-1], text[-1]) if text[-1:] in DURATION_UNITS else (text, "s")
    try:
        value = int(number) * DURATION_UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds or a number with s, m, h or d (15m, 1h), got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 s, got {text!r}")
    return value


def _component_number(text: str) -> tuple[str, int]:
    name, sep, number = text.partition("=")
    if not sep or not number.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected COMPONENT=N, got {text!r}")
    return name.strip(), int(number)


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def _instant(text: str) -> Any:
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 time such as 2026-12-01T10:00Z, got {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _add_context(command: argparse.ArgumentParser) -> None:
    command.add_argument("-c", "--context", type=_key_value, action="append", default=[], metavar="KEY=VALUE",
                         help="CDK context, as for cdk synth: -c stage=channels runs that stage's declarations (its "
                         "Kafka- and RabbitMQ-fed consumers through their channels); repeatable")


def build_parser() -> argparse.ArgumentParser:
    from dataclasses import fields

    from .chaos.rates import FaultRates  # light: the chaos module loads moto only when it runs

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the traceback of an error instead of one line")
    aws = argparse.ArgumentParser(add_help=False)
    add_aws_options(aws)

    parser = OneLineParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                           parents=[common])
    # No parser.set_defaults(debug=...): the --debug action is shared with every subcommand (parents), and a
    # default set here would reset a `inferbus --debug CMD` to False when the subcommand parses.
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    def command(name: str, help: str, *, talks_to_aws: bool = False, **kwargs: Any) -> argparse.ArgumentParser:
        parents = [common, aws] if talks_to_aws else [common]
        return commands.add_parser(name, help=help, parents=parents, **kwargs)

    demo = command("demo", "run the whole pipeline embedded on moto and print what happened",
                   description="Sends every declared component's held-out samples (pipeline/), with malformed copies "
                   "and duplicate deliveries, through the pipeline embedded on moto, and accounts for every event. "
                   "Progress goes to stderr; the summary (or --json) to stdout.")
    demo.add_argument("--count", type=_component_number, action="append", default=[], metavar="COMPONENT=N",
                      help="samples to send to a component (default: its declaration's demo count); repeatable")
    demo.add_argument("--duplicates", type=_component_number, action="append", default=[], metavar="COMPONENT=N",
                      help="samples to deliver a second time (default: its declaration's); repeatable")
    demo.add_argument("--replay", action="store_true",
                      help="then replay every event from the embedded archive, and show that nothing is processed twice")
    demo.add_argument("--report", metavar="DIR", nargs="?", const="demo-report", default=None,
                      help="also write a Markdown report with plots to DIR (default demo-report/)")
    demo.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_context(demo)
    demo.set_defaults(run=_demo)

    send = command("send", "put events on a deployed bus, each validated against its contract first", talks_to_aws=True,
                   description="Validates every event against its contract, then puts them on the bus (PutEvents, "
                   "10 per request). Nothing is sent if any event breaks its contract.")
    send.add_argument("--bus", required=True, help="event bus name (stack output EventBusName)")
    kind = send.add_mutually_exclusive_group(required=True)
    kind.add_argument("--event", metavar="FILE",
                      help="CloudEvents from a file (- for stdin): one JSON object, a JSON array, or JSON Lines")
    kind.add_argument("--sample", metavar="COMPONENT", help="a held-out demo sample of this component (pipeline/)")
    kind.add_argument("--type", help="an event of this type, its data given by --data")
    send.add_argument("--index", type=_in_range(0, 100_000), default=0, help="with --sample: which sample (default 0)")
    send.add_argument("--data", default="{}", help="with --type: the event's data, as JSON")
    send.add_argument("--source", help="with --sample or --type: CloudEvents source (default inferbus.demo)")
    send.set_defaults(run=_send)

    redrive = command("redrive", "show why DLQ messages failed, and move them back to their queue", talks_to_aws=True)
    redrive.add_argument("queue", nargs="?",
                         help="the dead-letter queue, by URL or name (stack outputs ...DeadLetterQueueUrl)")
    redrive.add_argument("--list", action="store_true", help="list every failure queue of the stack (each declared "
                         "consumer's, whatever its channel, then the kit's own checks' and workflow failure nets'), with "
                         "its depth and where a redrive sends it")
    redrive.add_argument("--stack", help="with --list: the stack (default: the settings' stack name, Inferbus)")
    redrive.add_argument("--source-url", help="the queue to move them back to (default: the one whose redrive policy "
                                              "names this DLQ)")
    redrive.add_argument("--broker-url", help="a RabbitMQ consumer's DLQ: the broker its queue is on, amqp[s]://user:"
                         "password@host:port (default: $INFERBUS_RABBITMQ_URL, else the local broker)")
    redrive.add_argument("--bootstrap-servers", help="a Kafka consumer's on-failure queue: a listener of the cluster that "
                         "this machine reaches, HOST:PORT,... (default: the servers each record names)")
    redrive.add_argument("--stage", help="a stage with declarations of its own (infra/stages/<stage>.py), whose "
                         "consumers the DLQ belongs to (default: pipeline/'s)")
    redrive.add_argument("--dry-run", action="store_true", help="only show what would move and why each failed")
    redrive.add_argument("--all", action="store_true",
                         help="move every message, also those that would fail again (uses SQS StartMessageMoveTask)")
    redrive.add_argument("--json", action="store_true", help="print the verdicts and what moved as JSON")
    redrive.set_defaults(run=_redrive)

    replay = command("replay", "replay a window of the bus's archive (exactly-once claims make it safe to repeat)",
                     talks_to_aws=True,
                     description="Starts an EventBridge archive replay of the events put on the bus between --since and "
                     "--until, to every rule (or, with --type, only to the rules that take those types). Consumers and "
                     "workflows recognise events they already processed by id, so a replay only redoes what was lost. "
                     "`inferbus demo --replay` replays from the embedded archive.")
    replay.add_argument("--bus", default="inferbus", help="event bus name (stack output EventBusName; default inferbus)")
    replay.add_argument("--since", type=_instant, required=True, help="start of the window, ISO 8601 (UTC if no zone)")
    replay.add_argument("--until", type=_instant, required=True, help="end of the window, ISO 8601 (UTC if no zone)")
    replay.add_argument("--type", action="append", default=[], metavar="TYPE",
                        help="only to the rules that take this event type; repeatable")
    replay.add_argument("--archive", help="the archive (default: the bus's one archive; stack output EventArchiveName)")
    replay.add_argument("--name", help="the replay's name (default: inferbus-<time>)")
    replay.add_argument("--wait", action="store_true", help="wait until the replay has finished")
    replay.add_argument("--json", action="store_true", help="print the replay as JSON")
    replay.set_defaults(run=_replay)

    seed = command("seed", "write a state table's seed items into a deployed table", talks_to_aws=True,
                   description="Writes the seed of a state table a consumer reads (StateTable(name, seed=FILE) in "
                   "pipeline/) into the deployed table, 25 items per BatchWriteItem; an item replaces the one with its "
                   "id, so seeding again is safe. The embedded runtime (demo, serve, chaos) seeds by itself.")
    seed.add_argument("name", help="the state table's declared name (customer-profiles)")
    seed.add_argument("--table", required=True, help="the deployed table (stack output <Name>StateTableName)")
    seed.add_argument("--file", type=Path, help="a JSON Lines file of items to write instead of the declared seed")
    seed.set_defaults(run=_seed)

    reviews = command("reviews", "list high-risk cases waiting for a person; approve or reject one")
    actions = reviews.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    listing = actions.add_parser("list", help="the cases on the manual-review queue (they stay there)", parents=[common, aws])
    listing.add_argument("--queue-url", required=True, help="the review queue (stack output ReviewQueueUrl)")
    listing.add_argument("--json", action="store_true", help="print the cases as JSON")
    for action, verb in (("approve", "approve"), ("reject", "reject")):
        sub = actions.add_parser(action, help=f"{verb} one case: resumes its workflow, which emits ReviewCompleted",
                                 parents=[common, aws])
        sub.add_argument("transaction_id", help="the case's transaction id (from 'reviews list')")
        sub.add_argument("--queue-url", required=True, help="the review queue (stack output ReviewQueueUrl)")
        sub.add_argument("--reviewer", default=os.environ.get("USER", "reviewer"), help="who decides (default $USER)")
        sub.add_argument("--note", help="why; carried in ReviewCompleted")
        sub.add_argument("--json", action="store_true", help="print the decision as JSON (a failure too, on stdout)")
    reviews.set_defaults(run=_reviews)

    chaos = command("chaos", "run each flow embedded with faults on purpose; account for every event",
                    description="Sends N inputs into each flow (a declared component with demo samples and everything "
                    "downstream of it) while its functions fail on purpose, then prints one ledger per flow. Exit 0 "
                    "only if every ledger balances.")
    chaos.add_argument("--flow", default="all", help="all (default), a declared component, or one word of its name "
                       "(image, risk, text, vision, review)")
    chaos.add_argument("--events", type=_in_range(1, 100_000), default=5000, help="events to send (default 5000)")
    for rate in fields(FaultRates):  # one flag per rate, its help from the rate's own definition
        chaos.add_argument(FaultRates.flag(rate), type=float if rate.name == "latency_ms" else _rate, default=rate.default,
                           dest=rate.name, metavar=FaultRates.flag(rate)[2:].replace("-", "_").upper(),
                           help=f"{rate.metadata['help']} (default {rate.default:g})")
    chaos.add_argument("--batch-size", type=_in_range(1, 100), default=10,
                       help="the batch of every consumer of the flow, whatever its channel "
                       "(default 10)")
    chaos.add_argument("--rate", type=_events_per_second, metavar="EVENTS_PER_SECOND",
                       help="limit every consumer of the flow to this many events per second (its max_events_per_second; "
                       "default: as declared) and check each rate-limited consumer held it")
    chaos.add_argument("--seed", type=int, default=7, help="for a repeatable run (default 7)")
    chaos.add_argument("--no-redrive", action="store_true", help="leave the DLQ as the faults left it")
    chaos.add_argument("--claims-store", choices=("dynamodb", "redis", "both"), default=None,
                       help="where the claims are kept (default the settings': dynamodb unless -c says otherwise, as "
                       "-c stage=channels does); redis: the local redis-server at "
                       "INFERBUS_REDIS_URL (default redis://127.0.0.1:6379); both: each flow once per store, their "
                       "requests and cost side by side")
    chaos.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_context(chaos)
    chaos.set_defaults(run=_chaos)
    serve = command("serve", "run the pipeline embedded behind a local AWS endpoint (AWS CLI, boto3, inferbus send)",
                    description="Starts the whole pipeline embedded on moto and answers AWS API calls "
                                "on the port: events put from any client flow through the rules to the in-process "
                                "consumers and workflows. One line per processed batch and finished execution; Ctrl-C "
                                "stops it. Clients use fake credentials and region us-east-1. Also served: the "
                                "ingest endpoint at /_inferbus/ingest/ (POST a CloudEvent, SigV4-signed for lambda, "
                                "as the stack's IngestUrl in AWS), and the stack's outputs through CloudFormation "
                                "describe-stacks; any other unsigned request gets a 404.")
    serve.add_argument("--port", type=_in_range(1, 65535), default=4566, help="port to listen on (default 4566)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--template", help="a synthesized template (JSON file; a root stack in a cloud assembly is read "
                       "with its nested stacks) instead of synthesizing the app")
    serve.add_argument("--json", action="store_true", help="one JSON object per log line")
    serve.add_argument("--retention", type=_duration_s, metavar="DURATION",
                       help="how long the twin remembers event ids to drop duplicates (the claims) and keeps archived "
                       "events for replays (default 1h; AWS keeps the claims for the template's lifetime, 45d by "
                       "default: pass 45d for that); a duplicate within it is dropped, its memory is bounded by it")
    serve.set_defaults(run=_serve)
    invoke = command("invoke", "run one function of the template with one event; print its result and logs",
                     description="The local counterpart of `sam local invoke -e event.json`: provisions the stack on "
                     "moto in this process and invokes one function once, with the template's environment (its claims "
                     "table and bus answer locally; nothing else runs). The result goes to stdout (an unhandled error "
                     "as the Invoke API returns it, exit 1), the function's log lines and a REPORT line to stderr.")
    invoke.add_argument("function", help="a declared consumer (image-classifier), a workflow's step "
                        "(text-pipeline.Tokenize, risk-review.Accept), or a logical id or function name")
    invoke.add_argument("--event", "-e", required=True, metavar="FILE",
                        help="the event as its trigger sends it (an SQS batch for a consumer, the state's input for a "
                        "step; for a queue's consumer one CloudEvent also does: it goes through the queue and arrives as "
                        "a batch of one): a JSON file, - for stdin, or JSON inline")
    invoke.add_argument("--template", metavar="FILE", help="a synthesized template (cdk.out/Inferbus.template.json); "
                        "default: synthesize the app")
    invoke.add_argument("--compact", action="store_true", help="print the result on one line")
    invoke.set_defaults(run=_invoke)

    rules = command("rules", "event patterns: test one against an event, as EventBridge would")
    rule_actions = rules.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    rule_test = rule_actions.add_parser("test", help="does PATTERN match EVENT? (exit 0 match, 1 no match, 2 invalid)",
                                        description="Answers as EventBridge's TestEventPattern would, with AWS's "
                                        "documented matching semantics (the embedded runtime's matcher).")
    rule_test.add_argument("pattern", help="the event pattern: JSON, or a file holding it")
    rule_test.add_argument("event", help="the event as EventBridge delivers it: JSON, or a file holding it")
    rule_test.add_argument("--json", action="store_true", help='print {"Result": true|false}, as TestEventPattern does')
    rule_test.set_defaults(run=_rules_test)

    docs = command("docs", "rewrite the README's event table (from the contracts and pipeline/) and the cost table of "
                           "docs/operations.md (from the synthesized stacks)")
    docs.add_argument("--check", action="store_true", help="only check that it is current (exit 1 if not)")
    docs.set_defaults(run=_docs)

    schemas = command("schemas", "print the JSON Schema of event types (from the contracts); write or check docs/schemas/")
    schemas.add_argument("type", nargs="*", help="event types (default: every one)")
    schemas.add_argument("--write", action="store_true", help="write every schema to docs/schemas/")
    schemas.add_argument("--check", action="store_true", help="only check that docs/schemas/ is current (exit 1 if not)")
    schemas.set_defaults(run=_schemas)

    diagram = command("diagram", "draw the topology from the synthesized template: Mermaid and an image",
                      description="Synthesizes the CDK app (no AWS needed) and draws bus -> rules (with their patterns) "
                      "-> queues and DLQs -> functions -> state machines -> result events, as Mermaid (.mmd) and an "
                      "image (SVG or PNG).")
    diagram.add_argument("--out", default=DIAGRAM_STEM, help=f"file path without extension (default {DIAGRAM_STEM}; "
                         "there, and with no -c, it also updates docs/architecture.md)")
    diagram.add_argument("--format", choices=("svg", "png"), default="svg", help="the image's format (default svg)")
    diagram.add_argument("-c", "--context", type=_key_value, action="append", default=[], metavar="KEY=VALUE",
                         help="CDK context, as for cdk synth (-c stage=prod); repeatable")
    diagram.add_argument("--json", action="store_true", help="print what was written as JSON")
    diagram.set_defaults(run=_diagram)

    new = command("new", "add a component: a consumer for your ONNX model, or a workflow skeleton",
                  description="Write a new component into this project (pipeline/, functions/, models/, "
                  "statemachines/, tests/). See docs/extending.md.")
    kinds = new.add_subparsers(dest="kind", required=True, parser_class=OneLineParser)
    consumer = kinds.add_parser("consumer", help="a queue consumer running your ONNX model on one event type",
                                description=NEW_CONSUMER_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    consumer.add_argument("name", help="the component's name, kebab-case (iris-classifier); not yet declared")
    consumer.add_argument("--model", required=True, metavar="PATH.onnx", help="your ONNX model file")
    consumer.add_argument("--event", required=True, metavar="TYPE",
                          help="the event type it takes, PascalCase (IrisSubmitted); an existing type's contract is reused")
    consumer.add_argument("--result", metavar="TYPE", help="the type of its results (default: IrisSubmitted -> "
                          "IrisClassified for a classifier, IrisScored otherwise); must be new")
    consumer.add_argument("--samples", metavar="PATH", help="held-out samples for the demo and the test: .npz, .csv "
                          "or .jsonl (see above); default: seeded random inputs")
    consumer.add_argument("--task", choices=("classifier", "regressor"), help="how to read one float output [N, K] "
                          "that could be either (logits or K targets); default: from the graph and the samples")
    consumer.add_argument("--labels", metavar="A,B,C", help="the classes of a model that ends in logits or scores, "
                          "in the order of its scores (binary: negative first); implies --task classifier")
    consumer.add_argument("--channel", default="sqs", metavar="sqs|fifo|kafka|rabbitmq",
                          help="how its events reach it: sqs (default: unordered), fifo (in order per --group-by key), "
                          "kafka (a topic, in order per partition: --topic and its cluster) or rabbitmq (a RabbitMQ "
                          "queue on Amazon MQ, --queue). See docs/channels.md")
    consumer.add_argument("--topic", metavar="NAME", help="a kafka consumer's topic")
    consumer.add_argument("--cluster-arn", metavar="ARN", help="a kafka topic's Amazon MSK cluster (IAM authentication)")
    consumer.add_argument("--bootstrap-servers", metavar="HOST:PORT,...", help="a self-managed Kafka cluster's brokers "
                          "(with --secret-arn, its SASL/SCRAM-512 user in Secrets Manager)")
    consumer.add_argument("--secret-arn", metavar="ARN", help="a self-managed Kafka cluster's SASL/SCRAM secret")
    consumer.add_argument("--queue", metavar="NAME", help="a rabbitmq consumer's RabbitMQ queue (default: its name)")
    consumer.add_argument("--group-by", metavar="PATH", help="a fifo consumer's key, a path into the event: "
                          "$.detail.data.<field> or a CloudEvent attribute (default $.detail.source)")
    consumer.set_defaults(run=_new)
    workflow = kinds.add_parser("workflow", help="a Step Functions workflow skeleton, one Lambda task per step",
                                description=NEW_WORKFLOW_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    workflow.add_argument("name", help="the component's name, kebab-case (order-check); not yet declared")
    workflow.add_argument("--event", metavar="TYPE", help="what starts an execution (default <Name>Submitted); an "
                          "existing type's contract is reused")
    workflow.add_argument("--result", metavar="TYPE", help="what it publishes (default <Stem>Processed); must be new")
    workflow.add_argument("--steps", metavar="A,B,C", default="process",
                          help="its Lambda steps in order, snake_case, comma-separated (default: one, process); "
                          "each gets functions/<name>/<step>.py and a Task")
    workflow.set_defaults(run=_new)

    models = command("models", "record an ONNX model in models/ and its manifest, checked against the kit's I/O",
                     description="Models the components load, by name in models/manifest.json. See docs/extending.md.")
    model_actions = models.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    add = model_actions.add_parser("add", help="check an .onnx file, benchmark it, copy it into models/ and write its "
                                   "manifest entry", description=MODELS_ADD_HELP,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    add.add_argument("path", metavar="PATH.onnx", help="the ONNX model file")
    add.add_argument("--name", help="its name in the manifest (default: from the file name, Iris_LogReg.onnx -> "
                     "iris-logreg)")
    add.add_argument("--samples", metavar="FILE", help="held-out rows (.npz, .csv, .jsonl as for new consumer): the "
                     "benchmark runs on them; they give an input's width the graph leaves open")
    add.add_argument("--scores", nargs="+", default=[], metavar="METRIC=VALUE",
                     help="what it scored on held-out data, e.g. accuracy=0.93 entity_f1=0.81 (needs --data)")
    add.add_argument("--data", metavar="NAME", help="the name of the data it was trained and scored on")
    add.add_argument("--replace", action="store_true", help="take the place of the model of the same name (a new "
                     "version); its previous metrics are dropped")
    add.add_argument("--json", action="store_true", help="print the manifest entry written as JSON")
    add.set_defaults(run=_models_add)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(argv)
    name = " ".join(part for part in (PROG, args.command, getattr(args, "action", None), getattr(args, "kind", None)) if part)
    ignore_interrupted_jsii()
    return run_command(name, lambda: args.run(args), debug=getattr(args, "debug", False))


if __name__ == "__main__":
    sys.exit(main())
