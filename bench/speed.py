"""Every speed figure of the shipped handlers, each beside its baseline, measured in ONE run.

What it runs (every consumer and every workflow step, found from the declarations in ``pipeline/``
and the synthesized template, which gives each function its environment):

Each CPU figure is the least of its repeats (other processes may share the machine); each cold init,
the least and the median of fresh interpreters, handler and baseline interleaved.

- **handler CPU** (µs/record, ``time.process_time``): the real handler on an SQS batch of 10, 100
  and 1,000 of the component's held-out samples (a workflow step: one event per invocation), AWS
  answered at once by a botocore ``before-send`` stub, so serialising, signing and parsing still
  run; against the naive Powertools recipe (``BatchProcessor``, and per record
  ``@idempotent_function`` on DynamoDB, the model run alone, ``logger.info``; results
  published in ``PutEvents`` of 10), and against bare onnxruntime (``session.run`` on the batch);
- **AWS requests per record**, by API, counted by the stub;
- **the request floor**: botocore's own CPU for the very requests the handler made (replayed
  against the same stub), per record: what a batched consumer cannot beat here;
- **cold init**: a fresh interpreter importing the handler (models loaded, clients made), tracing
  off and on, against a fresh interpreter that imports onnxruntime, opens the same models and
  makes the boto3 clients the function makes at init (both with the Lambda runtime's variables set, so
  the kit's init behaves as in Lambda: inferbus_lambda.cold_start; the handlers run from a copy of their
  tree with its bytecode compiled, as the bundler ships them and as the libraries have theirs); the kit's
  share is the difference of the medians (wall and CPU time), PASS within 50 ms; then the handler's first
  invocation in the same interpreter (init + first invoke); and pydantic alone, in the same rounds (a fresh
  interpreter importing it and making a first model: what the kit's pydantic contracts and settings cost
  before any of the kit's own code), with the share less it;
- **the embed step** against bare ``session.run`` on the same token ids;
- **asset sizes**: each function's unzipped asset in ``cdk.out`` (after ``npx cdk synth``).

Usage::

    .venv/bin/python bench/speed.py            # the whole run (a few minutes on 2 cores)
    .venv/bin/python bench/speed.py --quick    # fewer repeats and no batch of 1,000 (CI)
    .venv/bin/python bench/speed.py --cold     # the cold-init table alone: each function's kit's share
    .venv/bin/python bench/speed.py --cold --against /tmp/main   # ... beside another checkout's, in the same rounds
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import numpy as np
from botocore.awsrequest import AWSResponse
from inferbus_lambda.contracts import to_put_events_entry

from inferbus.demo.inputs import inputs_of, sample_events
from inferbus.model.declarations import Consumer, Workflow
from inferbus.runtime.lambda_host import CodeRoot
from pipeline import load_pipeline

REPO_ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = REPO_ROOT / "functions"
FAKE_AWS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true"}
# What AWS answers, at once: enough for the handler to read success.
ANSWERS = {
    "AWSEvents.PutEvents": b'{"FailedEntryCount": 0, "Entries": []}',
    "DynamoDB_20120810.TransactWriteItems": b"{}",
    "DynamoDB_20120810.BatchWriteItem": b'{"UnprocessedItems": {}}',
    "DynamoDB_20120810.PutItem": b"{}",
    "DynamoDB_20120810.UpdateItem": b"{}",
    "DynamoDB_20120810.GetItem": b"{}",
    "DynamoDB_20120810.DeleteItem": b"{}",
    "AmazonSQS.SendMessageBatch": b'{"Successful": [], "Failed": []}',
}


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


class InstantAws:
    """A botocore ``before-send`` hook: answers every request at once, counts them by API, and can
    record each request's parameters (to replay them for the floor)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.recorded: list[tuple[str, str, dict[str, Any]]] | None = None

    def before_send(self, request: Any, **_: Any) -> AWSResponse:
        target = request.headers.get("X-Amz-Target", b"")
        target = target.decode() if isinstance(target, bytes) else target
        self.counts[target.split(".")[-1]] += 1
        body = ANSWERS.get(target, b"{}")
        return AWSResponse(request.url, 200, {"content-type": "application/x-amz-json-1.0"}, _Raw(body))

    def record(self, params: dict[str, Any], model: Any, context: Any = None, **_: Any) -> None:
        if self.recorded is not None:
            self.recorded.append((model.service_model.service_name, model.name, copy.deepcopy(params)))

    def install(self, session: Any) -> None:
        session.events.register("before-send", self.before_send)
        session.events.register("provide-client-params", self.record)


@contextmanager
def environment(variables: Mapping[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class LambdaContext:
    function_name = "bench"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"
    aws_request_id = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def cpu_per_call(run: Callable[[], Any], repeat: int) -> float:
    """The least CPU seconds one call of ``run`` took (after one warm-up call): the figure least
    disturbed by whatever else runs on the machine."""
    run()
    times = []
    for _ in range(repeat):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return min(times)


# -- the functions, from the template ------------------------------------------------------------------

@dataclass
class Function:
    component: Consumer | Workflow
    label: str
    handler: str
    environment: dict[str, str]


def functions_of(template: dict[str, Any]) -> list[Function]:
    """Every consumer's and workflow step's function, with its template environment (tokens as placeholders)."""
    declarations = load_pipeline()
    by_service: dict[str, tuple[str, dict[str, str]]] = {}
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Lambda::Function" or "Handler" not in resource["Properties"]:
            continue
        variables = resource["Properties"].get("Environment", {}).get("Variables", {})
        env = {key: value if isinstance(value, str) else "bench-placeholder" for key, value in variables.items()}
        if "INVALID_EVENTS_QUEUE_URL" in env:
            env["INVALID_EVENTS_QUEUE_URL"] = "https://sqs.us-east-1.amazonaws.com/123456789012/bench"
        by_service[env.get("POWERTOOLS_SERVICE_NAME", "")] = (resource["Properties"]["Handler"], env)
    found = []
    for consumer in declarations.consumers:
        handler, env = by_service[consumer.name]
        found.append(Function(consumer, consumer.name, handler, env))
    for workflow in declarations.workflows:
        handler, env = by_service["accept"]
        found.append(Function(workflow, f"{workflow.name} Accept", handler, env))
        for stem in workflow.tasks:
            handler, env = by_service[workflow.task_service(stem)]
            found.append(Function(workflow, f"{workflow.name} {stem}", handler, env))
    return found


def load_handler(function: Function) -> Any:
    import importlib

    module_name, _, attribute = function.handler.rpartition(".")
    with environment({**function.environment, "POWERTOOLS_TRACE_DISABLED": "true", "LAMBDA_TASK_ROOT": str(REPO_ROOT)}):
        sys.modules.pop(module_name, None)
        return getattr(importlib.import_module(module_name), attribute)


def sqs_event(component: Consumer, size: int) -> dict[str, Any]:
    samples = [event for event, _ in sample_events(component, min(size, inputs_of(component).limit))]
    records = []
    for i in range(size):
        event = samples[i % len(samples)].model_copy(update={"id": f"bench-{i}", "correlationid": f"bench-{i}"})
        entry = to_put_events_entry(event, "bench")
        body = {"version": "0", "id": f"eb-{i}", "detail-type": entry["DetailType"], "source": entry["Source"],
                "account": "123456789012", "time": "2026-12-02T00:00:00Z", "region": "us-east-1", "resources": [],
                "detail": json.loads(entry["Detail"])}
        records.append({"messageId": f"m-{i}", "receiptHandle": "r", "body": json.dumps(body), "attributes": {},
                        "messageAttributes": {}, "md5OfBody": "", "eventSource": "aws:sqs",
                        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:bench", "awsRegion": "us-east-1"})
    return {"Records": records}


# -- baselines ---------------------------------------------------------------------------------------------

def naive_recipe(handler: Any, function: Function) -> Callable[[dict[str, Any]], Any]:
    """The Powertools recipe a hand-written consumer often is: per record, an idempotent function
    (DynamoDB PutItem + UpdateItem), the model on that record alone, a log line; results in PutEvents of 10."""
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent_function,
    )
    from inferbus_lambda.consumer import expect_type, result_event_id
    from inferbus_lambda.contracts import new_event
    from inferbus_lambda.publishing import publish_events

    runtime = handler.runtime
    parse = expect_type(runtime.environment.CONSUMES)
    persistence = DynamoDBPersistenceLayer(table_name="bench", boto3_client=boto3.client("dynamodb"))
    config = IdempotencyConfig(event_key_jmespath="id", expires_after_seconds=3600)
    processor = BatchProcessor(event_type=EventType.SQS)
    published: list[dict[str, Any]] = []

    @idempotent_function(data_keyword_argument="event", persistence_store=persistence, config=config)
    def score_one(event: dict[str, Any]) -> dict[str, Any]:
        parsed = parse(event["body"])
        (data,) = runtime.infer([parsed], runtime)
        result = new_event(data, source=runtime.environment.RESULT_SOURCE, correlationid=parsed.correlationid,
                           subject=parsed.id, event_id=result_event_id(parsed.id, runtime.environment.RESULT_SOURCE,
                                                                  input_source=parsed.source))
        entry = to_put_events_entry(result, runtime.environment.EVENT_BUS_NAME)
        return {key: value for key, value in entry.items() if key != "Time"}  # stored as JSON

    def record_handler(record: Any) -> None:
        published.append(score_one(event={"id": json.loads(record.body)["detail"]["id"], "body": record.body}))
        runtime.logger.info("record scored", extra={"message_id": record.message_id})

    def run(event: dict[str, Any]) -> Any:
        published.clear()
        answer = process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                          context=LambdaContext())
        publish_events(runtime.events, published)
        return answer

    return run


def bare_session_runs(handler: Any) -> list[Callable[[int], Callable[[], Any] | None]]:
    """``session.run`` of each model the function loads, on a batch of zeros of the model's input width."""
    runs = []
    for model in handler.runtime.models.values():
        session = getattr(model, "session", None)
        if session is None:
            continue
        inputs = session.get_inputs()

        def make(size: int, session: Any = session, inputs: Any = inputs) -> Callable[[], Any] | None:
            if len(inputs) == 1 and len(inputs[0].shape) == 2:
                width = inputs[0].shape[1] if isinstance(inputs[0].shape[1], int) else 1
                dtype = np.int64 if "int64" in inputs[0].type else np.float32
                feed = {inputs[0].name: np.zeros((size, width), dtype=dtype)}
            elif all("int64" in i.type and len(i.shape) == 2 for i in inputs):  # the text encoder: 32 tokens each
                feed = {i.name: np.ones((size, 32), dtype=np.int64) for i in inputs}
            else:  # a graph whose inputs a batch of zeros does not describe (the taggers, the detector)
                return None
            return lambda: session.run(None, feed)

        runs.append(make)
    return runs


# -- what each workflow step receives: its ASL walked over the steps' real answers ------------------------

def _at(document: Any, path: str) -> Any:
    """A reference path (``$``, ``$.a.b``) in ``document``."""
    for key in [key for key in path.removeprefix("$").split(".") if key]:
        document = document[key]
    return document


def _filled(template: Any, document: Any) -> Any:
    """A ``Parameters`` or ``ResultSelector`` template with each ``key.$`` path resolved in ``document``."""
    if isinstance(template, dict):
        return {key.removesuffix(".$"): _at(document, value) if key.endswith(".$") else _filled(value, document)
                for key, value in template.items()}
    if isinstance(template, list):
        return [_filled(value, document) for value in template]
    return template


def _placed(state: Any, result_path: str | None, result: Any) -> Any:
    """``state`` with ``result`` at ``result_path`` (``None``: discarded; ``$``: replaces it)."""
    if result_path is None:
        return state
    keys = [key for key in result_path.removeprefix("$").split(".") if key]
    if not keys:
        return result
    placed = copy.deepcopy(state)
    target = placed
    for key in keys[:-1]:
        target = target.setdefault(key, {})
    target[keys[-1]] = result
    return placed


def walk_states(definition: Mapping[str, Any], state: Any, run_task: Callable[[str, Any], Any]) -> Any:
    """Run a workflow's own states over ``state`` as Step Functions would pass data between them, each Lambda
    task (``${<Stem>FunctionArn}``) answered by ``run_task(stem, payload)``; other tasks (publishing) and
    choices end the walk: the bench needs only the inputs its Lambda steps get."""
    name = definition["StartAt"]
    while name:
        spec = definition["States"][name]
        function = spec.get("Parameters", {}).get("FunctionName", "") if spec["Type"] == "Task" else ""
        if spec["Type"] == "Parallel":
            result = [walk_states(branch, copy.deepcopy(state), run_task) for branch in spec["Branches"]]
        elif function.startswith("${") and function.endswith("FunctionArn}"):
            result = {"Payload": run_task(function[2:-len("FunctionArn}")], _filled(spec["Parameters"]["Payload"], state))}
            if "ResultSelector" in spec:
                result = _filled(spec["ResultSelector"], result)
        elif spec["Type"] == "Pass":
            result = spec.get("Result", state)
        else:
            return state
        state = _at(_placed(state, spec.get("ResultPath", "$"), result), spec.get("OutputPath", "$"))
        name = spec.get("Next")
    return state


def step_inputs(workflow: Workflow, functions: list[Function]) -> dict[str, Any]:
    """What each of ``workflow``'s functions gets (by label) for one held-out sample: Accept its request, each
    task its ASL ``Payload`` from the answers of the steps before it (run here, AWS answered by the stub)."""
    steps = {function.label.split()[-1]: function for function in functions if function.component is workflow}
    detail = json.loads(sample_events(workflow, 1)[0][0].model_dump_json())
    inputs: dict[str, Any] = {}

    def run(stem: str, payload: Any) -> Any:
        function = steps[stem]
        inputs[function.label] = copy.deepcopy(payload)
        with environment({**function.environment, "POWERTOOLS_TRACE_DISABLED": "true"}):
            return load_handler(function)(copy.deepcopy(payload), LambdaContext())

    accepted = run("Accept", accept_request(workflow, detail))
    walk_states(json.loads((REPO_ROOT / "statemachines" / workflow.definition).read_text()), {"accepted": accepted}, run)
    return inputs


# -- the measurements -----------------------------------------------------------------------------------

def measure_consumers(functions: list[Function], aws: InstantAws, sizes: list[int], repeat: int) -> list[list[str]]:
    rows = []
    for function in functions:
        if not isinstance(function.component, Consumer):
            continue
        if inputs_of(function.component) is None:  # fed by another component's results: no samples of its own to send
            print(f"{function.component.name}: not measured, it declares no demo inputs (DemoInputs) to send it")
            continue
        handler = load_handler(function)
        naive = naive_recipe(handler, function)
        bare = bare_session_runs(handler)
        env = {**function.environment, "POWERTOOLS_TRACE_DISABLED": "true"}
        with environment(env):
            for size in sizes:
                event = sqs_event(function.component, size)
                aws.counts.clear()
                cpu = cpu_per_call(lambda: handler(event, LambdaContext()), repeat)
                requests = {api: n / ((repeat + 1) * size) for api, n in aws.counts.items()}
                aws.recorded = []
                handler(event, LambdaContext())
                recorded, aws.recorded = aws.recorded, None
                floor = replay_floor(recorded, repeat) / size
                floor_unvalidated = replay_floor(recorded, repeat, validate=False) / size
                naive_cpu = cpu_per_call(lambda: naive(event), max(1, repeat // 2))
                bare_cpu = sum(cpu_per_call(run, repeat) for make in bare if (run := make(size)) is not None)
                dynamodb = sum(n for api, n in requests.items() if api in {"TransactWriteItems", "BatchWriteItem"})
                rows.append([
                    function.label, str(size), f"{cpu / size * 1e6:,.0f}", f"{naive_cpu / size * 1e6:,.0f}",
                    f"{naive_cpu / cpu:.1f}×", f"{floor * 1e6:,.0f}", f"{cpu / size / floor:.2f}×",
                    f"{floor_unvalidated * 1e6:,.0f}",
                    f"{bare_cpu / size * 1e6:,.1f}", f"{dynamodb:.3f}", f"{requests.get('PutEvents', 0):.3f}",
                    ", ".join(f"{api} {n:.3f}" for api, n in sorted(requests.items())),
                ])
    return rows


def replay_floor(recorded: list[tuple[str, str, dict[str, Any]]], repeat: int, *, validate: bool = True) -> float:
    """botocore's own CPU for exactly these requests (against the instant stub): seconds per batch.
    ``validate=False``: with client-side parameter validation off, as the handlers' clients are."""
    from botocore.config import Config

    config = Config(parameter_validation=validate)
    clients = {service: boto3.client(service, config=config) for service in {service for service, _, _ in recorded}}
    calls = [(getattr(clients[service], boto3_method(clients[service], operation)), params)
             for service, operation, params in recorded]
    return cpu_per_call(lambda: [call(**params) for call, params in calls], repeat)


def boto3_method(client: Any, operation: str) -> str:
    return client.meta.method_to_api_mapping and next(
        method for method, api in client.meta.method_to_api_mapping.items() if api == operation)


def measure_steps(functions: list[Function], aws: InstantAws, repeat: int) -> list[list[str]]:
    """Each workflow's steps in their declared order, each on what its ASL passes it after the steps before it."""
    rows = []
    for workflow in load_pipeline().workflows:
        if inputs_of(workflow) is None:
            continue
        inputs = step_inputs(workflow, functions)
        for function in [f for f in functions if f.component is workflow and f.label in inputs]:
            handler = load_handler(function)
            step_input = inputs[function.label]
            with environment({**function.environment, "POWERTOOLS_TRACE_DISABLED": "true"}):
                aws.counts.clear()
                cpu = cpu_per_call(lambda: handler(copy.deepcopy(step_input), LambdaContext()), repeat * 5)
                calls = ", ".join(f"{api} {n / (repeat * 5 + 1):.0f}" for api, n in sorted(aws.counts.items())) or "none"
            bare = bare_session_runs(handler)
            bare_cpu = sum(cpu_per_call(run, repeat * 5) for make in bare if (run := make(1)) is not None) or None
            rows.append([function.label, f"{cpu * 1e6:,.0f}", f"{bare_cpu * 1e6:,.0f}" if bare_cpu else "—", calls])
    return rows


def accept_request(workflow: Workflow, detail: dict[str, Any]) -> dict[str, Any]:
    """What a workflow's ASL passes its Accept step."""
    delivered = {"version": "0", "id": "eb", "source": detail["source"], "detail-type": detail["type"],
                 "account": "123456789012", "time": "2026-12-02T00:00:00Z", "region": "us-east-1", "resources": [],
                 "detail": detail}
    return {"event": delivered, "workflow": workflow.name, "types": [workflow.accepts.type],
            "emits": list(workflow.emits), "result_source": workflow.result_source,
            "execution": "arn:aws:states:us-east-1:123456789012:execution:bench:1"}


def measure_embed(functions: list[Function], repeat: int) -> list[str] | None:
    """The embed step against bare ``session.run`` on the same token ids (held-out texts)."""
    embed = next((f for f in functions if f.handler.endswith("embed.lambda_handler")), None)
    tokenize = next((f for f in functions if f.handler.endswith("tokenize.lambda_handler")), None)
    if embed is None or tokenize is None or inputs_of(embed.component) is None:
        return None
    texts = [event.data.text for event, _ in sample_events(embed.component, min(40, inputs_of(embed.component).limit))]
    tokenizer = load_handler(tokenize).runtime.models.only
    token_ids = [t.input_ids for t in tokenizer.encode(texts)]
    handler = load_handler(embed)
    session = handler.runtime.models.only.session
    feeds = [{"input_ids": np.array([ids], dtype=np.int64), "attention_mask": np.ones((1, len(ids)), dtype=np.int64)}
             for ids in token_ids]
    with environment({**embed.environment, "POWERTOOLS_TRACE_DISABLED": "true"}):
        step = cpu_per_call(lambda: [handler({"input_ids": ids}, LambdaContext()) for ids in token_ids], repeat)
    bare = cpu_per_call(lambda: [session.run(["embedding"], feed) for feed in feeds], repeat)
    return [f"{len(texts)} held-out texts, one per invocation", f"{step / len(texts) * 1e3:.2f}",
            f"{bare / len(texts) * 1e3:.2f}", f"{bare / step:.2f}×"]


COLD_HANDLER = """
import importlib, json, sys, time
started, cpu = time.perf_counter(), time.process_time()
module, _, attribute = sys.argv[1].rpartition(".")
handler = getattr(importlib.import_module(module), attribute)
init = {"init_ms": (time.perf_counter() - started) * 1000, "init_cpu_ms": (time.process_time() - cpu) * 1000}
if len(sys.argv) > 2:  # then one invocation, AWS answered at once (as by InstantAws), the stub set up untimed
    import gc
    from botocore.awsrequest import AWSResponse
    from botocore.client import BaseClient
    event, answers = json.loads(open(sys.argv[2]).read()), json.loads(sys.argv[3])

    class Raw:
        def __init__(self, body): self.body = body
        def stream(self, **_): yield self.body

    def answer(request, **_):
        target = request.headers.get("X-Amz-Target", b"")
        target = target.decode() if isinstance(target, bytes) else target
        body = answers.get(target, "{}").encode()
        return AWSResponse(request.url, 200, {"content-type": "application/x-amz-json-1.0"}, Raw(body))

    for client in [o for o in gc.get_objects() if isinstance(o, BaseClient)]:
        client.meta.events.register("before-send", answer)

    class Context:
        function_name, memory_limit_in_mb, aws_request_id = "bench", 1024, "bench"
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"
        def get_remaining_time_in_millis(self): return 30000

    started, cpu = time.perf_counter(), time.process_time()
    handler(event, Context())
    init |= {"invoke_ms": (time.perf_counter() - started) * 1000, "invoke_cpu_ms": (time.process_time() - cpu) * 1000}
print(json.dumps(init))
"""
COLD_BARE = """
import json, sys, time
started, cpu = time.perf_counter(), time.process_time()
models, tokenizers, services = (json.loads(arg) for arg in sys.argv[1:4])
if models:
    import onnxruntime
    for path in models:
        onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
if tokenizers:
    from tokenizers import Tokenizer
    for path in tokenizers:
        Tokenizer.from_file(path)
if services:
    import boto3
    for service in services:
        boto3.client(service)
print(json.dumps({"init_ms": (time.perf_counter() - started) * 1000, "init_cpu_ms": (time.process_time() - cpu) * 1000}))
"""
COLD_PYDANTIC = """
import json, time
started, cpu = time.perf_counter(), time.process_time()
from pydantic import BaseModel

class First(BaseModel):
    name: str

First(name="first")
print(json.dumps({"init_ms": (time.perf_counter() - started) * 1000, "init_cpu_ms": (time.process_time() - cpu) * 1000}))
"""
KIT_SHARE_GOAL_MS = 50.0  # issue 21: the kit's share of a cold init, for every function


def first_inputs(functions: list[Function]) -> dict[str, dict[str, Any]]:
    """What each function's first invocation gets: a consumer, an SQS batch of 10 held-out samples; a
    workflow's steps, what its ASL passes each after the steps before it (run here once)."""
    inputs: dict[str, dict[str, Any]] = {}
    for function in functions:
        if isinstance(function.component, Consumer) and inputs_of(function.component) is not None:
            inputs[function.label] = sqs_event(function.component, 10)
    for workflow in load_pipeline().workflows:
        if inputs_of(workflow) is not None:
            inputs |= step_inputs(workflow, functions)
    return inputs


def compiled_copy(functions: Path, into: Path) -> Path:
    """A copy of a ``functions/`` tree with its bytecode compiled as the bundler compiles it
    (``infra/constructs/bundling.py``). Without it, where bytecode is not written (``PYTHONDONTWRITEBYTECODE``,
    a read-only tree) every fresh interpreter compiles the kit's modules from source while the
    libraries beside them load theirs: the kit's share would carry about 10 ms of compiling."""
    import compileall
    import py_compile
    import shutil

    shutil.copytree(functions, into, ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(into, quiet=1, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    return into


def measure_cold(functions: list[Function], repeat: int, inputs: Mapping[str, dict[str, Any]],
                 against: Path | None = None) -> list[list[str]]:
    """Fresh interpreters, interleaved run by run: the handler (then its first invocation, on the
    instant stub), against the bare libraries opening the same model files (as the bundler's trace
    finds them) and making the same boto3 clients at init. The kit's share is the difference of
    the medians, in wall time (the goal) and in CPU time (what another process on the machine
    disturbs least). With ``against`` (another checkout's root), that tree's handler runs in the same
    rounds, beside the same baseline: its kit's share and init + first invoke (CPU) are the "before"."""
    import shutil
    import statistics
    import tempfile

    from infra.constructs.bundling import MODELS_DIR, trace_imports

    scratch = Path(tempfile.mkdtemp(prefix="inferbus-cold-"))
    handlers = compiled_copy(FUNCTIONS, scratch / "handlers")
    against_handlers = compiled_copy(against / "functions", scratch / "against") if against else None
    rows = []
    init_clients = {"consumer": ["events", "dynamodb"], "accept": ["dynamodb"], "step": []}
    answers = json.dumps({target: body.decode() for target, body in ANSWERS.items()})
    for function in functions:
        kind = ("consumer" if isinstance(function.component, Consumer) else
                "accept" if function.label.endswith("Accept") else "step")
        read = [str(MODELS_DIR / name) for name in trace_imports(function.handler, function.environment)["files"]]
        paths = [path for path in read if path.endswith(".onnx")]
        tokenizers = [path for path in read if path.endswith("tokenizer.json")]
        env = {**os.environ, **FAKE_AWS, **function.environment, "PYTHONPATH": str(handlers),
               "LAMBDA_TASK_ROOT": str(REPO_ROOT), "AWS_LAMBDA_FUNCTION_NAME": "bench",
               "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"}  # as Lambda's runtime sets them (nothing connects to it)
        off = {**env, "POWERTOOLS_TRACE_DISABLED": "true"}
        on = {**env, "AWS_XRAY_CONTEXT_MISSING": "IGNORE_ERROR"}
        on.pop("POWERTOOLS_TRACE_DISABLED", None)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as event_file:
            json.dump(inputs.get(function.label, {}), event_file)
        invoke = [event_file.name, answers] if function.label in inputs else []

        def run(script: str, args: list[str], env: dict[str, str]) -> dict[str, float]:
            answer = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                                    check=True)
            return json.loads(answer.stdout.strip().splitlines()[-1])

        bare_args = [json.dumps(paths), json.dumps(tokenizers), json.dumps(init_clients[kind])]
        runs: dict[str, list[dict[str, float]]] = {"bare": [], "off": [], "on": [], "pydantic": [],
                                                   **({"against": []} if against else {})}
        for _ in range(repeat):  # interleaved: a burst of load on the machine hits both sides alike
            runs["bare"].append(run(COLD_BARE, bare_args, off))
            runs["pydantic"].append(run(COLD_PYDANTIC, [], off))
            runs["off"].append(run(COLD_HANDLER, [function.handler, *invoke], off))
            runs["on"].append(run(COLD_HANDLER, [function.handler], on))
            if against:
                runs["against"].append(run(COLD_HANDLER, [function.handler, *invoke],
                                           {**off, "PYTHONPATH": str(against_handlers)}))
        os.unlink(event_file.name)

        median = {(side, key): statistics.median(r[key] for r in results) for side, results in runs.items()
                  for key in results[0]}
        least = {(side, key): min(r[key] for r in results) for side, results in runs.items() for key in results[0]}
        share = median["off", "init_ms"] - median["bare", "init_ms"]
        share_cpu = median["off", "init_cpu_ms"] - median["bare", "init_cpu_ms"]
        bare = median["bare", "init_ms"]
        first = (f"{median['off', 'init_ms'] + median['off', 'invoke_ms']:.0f}" if invoke else "—")
        first_cpu = (f"{median['off', 'init_cpu_ms'] + median['off', 'invoke_cpu_ms']:.0f}" if invoke else "—")
        rows.append([
            function.label, f"{least['off', 'init_ms']:.0f} / {median['off', 'init_ms']:.0f}",
            f"{least['bare', 'init_ms']:.0f} / {bare:.0f}", f"{share:.0f}",
            f"{median['off', 'init_ms'] / bare:.2f}×" if bare >= 5 else "— (no model, no client)",
            "PASS" if share <= KIT_SHARE_GOAL_MS else "FAIL",
            f"{median['off', 'init_cpu_ms']:.0f}", f"{median['bare', 'init_cpu_ms']:.0f}", f"{share_cpu:.0f}",
            "PASS" if share_cpu <= KIT_SHARE_GOAL_MS else "FAIL",
            first, first_cpu, f"{median['on', 'init_ms']:.0f}",
            f"{median['pydantic', 'init_ms']:.0f}", f"{share - median['pydantic', 'init_ms']:.0f}",
            " + ".join([*(["onnxruntime"] * bool(paths)), *(["tokenizers"] * bool(tokenizers)),
                        *init_clients[kind]]) or "nothing",
        ])
        if against:
            before = median["against", "init_cpu_ms"] - median["bare", "init_cpu_ms"]
            before_first = (f"{median['against', 'init_cpu_ms'] + median['against', 'invoke_cpu_ms']:.0f}"
                            if invoke else "—")
            rows[-1][-1:-1] = [f"{before:.0f}", before_first]
    shutil.rmtree(scratch)
    return rows


def asset_sizes(cdk_out: Path) -> list[list[str]]:
    """Each function's unzipped asset in a bundled cloud assembly (``npx cdk synth``)."""
    templates = list(cdk_out.glob("*.template.json"))
    if not templates:
        return []
    template = json.loads(templates[0].read_text())
    rows = []
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Lambda::Function" or "Handler" not in resource["Properties"]:
            continue
        asset = resource.get("Metadata", {}).get("aws:asset:path")
        if not asset or not (cdk_out / asset).is_dir():
            continue
        files = [p for p in (cdk_out / asset).rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        service = resource["Properties"].get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME", "?")
        packages = sorted({p.name.removesuffix(".dist-info").rsplit("-", 1)[0]
                           for p in (cdk_out / asset).glob("*.dist-info")})
        models = sorted(p.name for p in (cdk_out / asset / "models").glob("*") if p.name != "manifest.json")
        rows.append([service, f"{size / 1e6:.1f}", ", ".join(models) or "none", ", ".join(packages)])
    return sorted(rows)


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"\n{title}")
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    print("  ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=True)))
    for row in rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, batches of 10 and 100 only (for CI)")
    parser.add_argument("--cold", action="store_true", help="the cold-init table only (the kit's share of each init)")
    parser.add_argument("--cold-runs", type=int, default=None,
                        help="fresh interpreters per side and function (default 7, 5 with --quick; medians need ≥ 5)")
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout's root (e.g. a snapshot of main): its handlers run in the same cold-init "
                             "rounds, and their CPU share and init + 1st invoke are printed as 'before'")
    parser.add_argument("--only", default="",
                        help="cold init: only the functions whose label contains this text (e.g. Accept)")
    parser.add_argument("--cdk-out", type=Path, default=REPO_ROOT / "cdk.out",
                        help="a bundled cloud assembly for the asset sizes (default cdk.out, from `npx cdk synth`)")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    cold_runs = args.cold_runs or (5 if args.quick else 7)
    sizes = [10, 100] if args.quick else [10, 100, 1000]
    os.environ.update(FAKE_AWS)
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Bench")

    from inferbus.template import synthesize

    functions = functions_of(synthesize())
    CodeRoot(FUNCTIONS).install()
    aws = InstantAws()
    boto3.setup_default_session()
    aws.install(boto3.DEFAULT_SESSION)  # every client the handlers make gets the stub
    sink = open(os.devnull, "w")  # noqa: SIM115 - the handlers' JSON logs and metrics
    stdout, sys.stdout = sys.stdout, sink
    try:
        consumers = [] if args.cold else measure_consumers(functions, aws, sizes, repeat)
        steps = [] if args.cold else measure_steps(functions, aws, repeat)
        embed = None if args.cold else measure_embed(functions, repeat)
        inputs = first_inputs(functions)
    finally:
        sys.stdout = stdout
    cold = measure_cold([f for f in functions if args.only in f.label], cold_runs, inputs, args.against)

    print(f"inferbus bench{' (quick)' if args.quick else ''}: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"onnxruntime {__import__('onnxruntime').__version__}; AWS answered at once by a botocore stub")
    if not args.cold:
        table("consumers: CPU per record (µs) beside its baselines; requests per record",
              ["consumer", "batch", "handler", "naive", "naive/handler", "floor", "handler/floor", "floor unvalidated",
               "bare run", "DynamoDB", "PutEvents", "requests by API"], consumers)
        table("workflow steps: CPU per invocation (µs); requests per invocation",
              ["step", "handler", "bare run", "requests"], steps)
    if embed:
        table("embed step against bare session.run (ms per text; ≥ 0.95× is the goal)",
              ["texts", "embed step", "bare session.run", "bare/step"], [embed])
    table(f"cold init (ms; min / median of {cold_runs} fresh interpreters each, interleaved): the handler imported "
          f"(models loaded, clients made, tracing off) against its bare libraries; kit's share = median "
          f"difference, goal ≤ {KIT_SHARE_GOAL_MS:.0f} ms",
          ["function", "handler", "bare", "kit's share", "handler/bare", "goal", "handler CPU", "bare CPU",
           "share CPU", "goal CPU", "init + 1st invoke", "same, CPU", "tracing on", "pydantic alone",
           "share less pydantic",
           *(["before: share CPU", "before: init + 1st, CPU"] if args.against else []),
           "bare = its models opened by + clients"], cold)
    if args.cold:
        return
    sizes_rows = asset_sizes(args.cdk_out)
    if sizes_rows:
        table(f"assets: unzipped MB in {args.cdk_out.name}", ["function", "MB", "models", "packages"], sizes_rows)
    else:
        print(f"\nassets: no bundled cloud assembly in {args.cdk_out}; run `npx cdk synth` first to measure them")


if __name__ == "__main__":
    main()
