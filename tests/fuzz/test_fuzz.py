"""Fuzzing every input type: bodies from the contracts' JSON Schemas and mutations of valid events.

For each batch: no invocation crashes; every valid record produces exactly one result; every
invalid record has a reason and a destination (the invalid-events queue); and the bus agrees
with the contract (a valid input is taken by exactly one rule; an invalid one either by a rule
whose consumer refuses it, or by none, and then the unrouted-events check keeps it with a reason).

The input types and their consumers and workflows come from the declarations. The default run
is a bounded profile; ``make fuzz`` runs the long one (``INFERBUS_FUZZ_PROFILE=long``, at least
10,000 bodies per input type and way of generating) and writes the counts to ``fuzz-report.jsonl``.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
from event_patterns import CompiledPattern, compile_pattern
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from inferbus_lambda.claims import InMemoryClaimStore
from inferbus_lambda.contracts import data_model, from_put_events_entry
from inferbus_lambda.errors import REJECTION_ERRORS, TransientError
from inferbus_lambda.unrouted import UnroutedCheck
from inferbus_lambda.execution_failures import report
from inferbus_lambda.workflow import accept

from inferbus.demo.inputs import demo_components, input_type, sample_events
from inferbus.local import LocalPipeline
from inferbus.model.declarations import Workflow
from inferbus.model.names import UNROUTED_CHECK_ID
from tests.declared import DEMO, PIPELINE, RESULT_SOURCES, declared_takers
from tests.fuzz.harness import MemoryConsumer, as_body, contract_verdict, delivered

PROFILE = os.environ.get("INFERBUS_FUZZ_PROFILE", "ci")
LONG = PROFILE == "long"
BATCH = (10, 30) if LONG else (1, 8)
MIN_BODIES = 10_000  # per input type and way of generating, in the long profile
settings.register_profile("ci", max_examples=6, deadline=None, database=None, derandomize=True,
                          suppress_health_check=list(HealthCheck))
settings.register_profile("long", max_examples=700, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck))
settings.load_profile("long" if LONG else "ci")
pytestmark = [pytest.mark.fuzz_long] if LONG else []

CONSUMERS = {c.name: c for c in PIPELINE.consumers}  # several may take one event type
WORKFLOWS = [w for w in PIPELINE.workflows if not w.accepts.sources]  # taking events from any producer
ALL_WORKFLOWS = list(PIPELINE.workflows)  # StartExecution reaches every one, whatever its rule takes
INPUT_TYPES = sorted({*(c.accepts.type for c in CONSUMERS.values()), *(w.accepts.type for w in WORKFLOWS)})
SAMPLES = {t: [event.model_dump(mode="json") for c in demo_components(PIPELINE) if input_type(c) == t
               for event, _ in sample_events(c, min(DEMO[c.name].limit, 5))] for t in INPUT_TYPES}

# -- generating ---------------------------------------------------------------------------------

EDGE_NUMBERS = [0, -0.0, 1, -1, 16, 17, 255, 1e6, 1e6 + 1, -1e6 - 1, 2**31, 2**53 + 1, 2**63, -(2**63) - 1, 1e308, 5e-324,
                0.1, 1.5, 1e-7]
EDGE_STRINGS = ["", " ", "\u200b", "a" * 129, "x" * 2001, "🙂", "é", "\u0000", "1.0", "full", "Full", "classify", "null"]
EDGE_VALUES = [None, True, False, [], {}, *EDGE_NUMBERS, *EDGE_STRINGS]


def envelope(event_type: str, data: Any, index: int) -> dict[str, Any]:
    return {"specversion": "1.0", "id": f"fuzz-{index}-{uuid.uuid4().hex[:8]}", "source": "fuzz.producer",
            "type": event_type, "time": datetime.now(UTC).isoformat(), "correlationid": "fuzz",
            "datacontenttype": "application/json", "data": data}


def from_contract(event_type: str) -> st.SearchStrategy[dict[str, Any]]:
    """``data`` from the type's JSON Schema (as pydantic writes it), mostly valid, sometimes not
    (the schema does not say 'not blank' or 'sums to 1')."""
    return from_schema(data_model(event_type).model_json_schema())


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list) and value:
        found += paths(value[0], (*prefix, 0)) + paths(value[-1], (*prefix, len(value) - 1))
    return found


def set_path(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = new
    return value


def valid_events(event_type: str) -> st.SearchStrategy[dict[str, Any]]:
    """Valid events of ``event_type``: the demo's samples, or, for a type the demo only produces inside the
    pipeline (a result others consume, such as an approval), data drawn from its contract that validates."""
    if SAMPLES[event_type]:
        return st.sampled_from(SAMPLES[event_type])

    def valid(data: Any) -> bool:
        try:
            data_model(event_type).model_validate(data)
        except ValueError:
            return False
        return True

    return from_contract(event_type).filter(valid).map(lambda data: envelope(event_type, data, 0))


@st.composite
def mutated(draw: st.DrawFn, event_type: str, index: int) -> str:
    """A valid event of ``event_type``, changed in one way: a value's type, size or encoding, its
    nesting, a number at or beyond a limit, a key dropped or added; or its JSON text broken."""
    detail = json.loads(json.dumps(draw(valid_events(event_type))))
    detail["id"] = f"fuzz-{index}-{uuid.uuid4().hex[:8]}"
    kind = draw(st.sampled_from(["value", "value", "value", "size", "nest", "drop", "add", "text"]))
    path = draw(st.sampled_from(paths(detail)[1:]))
    current: Any = detail
    for key in path:
        current = current[key]
    if kind == "value":
        detail = set_path(detail, path, draw(st.sampled_from(EDGE_VALUES) | st.integers() | st.floats(allow_nan=False)
                                             | st.text(max_size=40)))
    elif kind == "size":
        if isinstance(current, list):
            size = draw(st.sampled_from([0, 1, len(current) - 1, len(current) + 1, 10_000]))
            detail = set_path(detail, path, (current * (size // max(len(current), 1) + 1))[:size] if current else [0] * size)
        else:
            detail = set_path(detail, path, draw(st.sampled_from(["", "y" * 257, "z" * 5000])))
    elif kind == "nest":
        depth = draw(st.sampled_from([1, 2, 50, 500]))
        for _ in range(depth):
            current = [current] if draw(st.booleans()) else {"v": current}
        detail = set_path(detail, path, current)
    elif kind == "drop" and len(path) >= 1 and isinstance(path[-1], str):
        parent = detail
        for key in path[:-1]:
            parent = parent[key]
        parent.pop(path[-1])
    elif kind == "add":
        parent = detail if not isinstance(current, dict) else current
        parent[draw(st.sampled_from(["extra", "id", "\u200bdata", "data "]))] = draw(st.sampled_from(EDGE_VALUES))
    body = as_body(delivered(detail))
    if kind == "text":
        body = draw(st.sampled_from([
            lambda b: b.replace('"correlationid": ', '"correlationid": "dup", "correlationid": ', 1),
            lambda b: b.replace('"specversion": "1.0"', '"specversion": NaN', 1),
            lambda b: b.replace('"correlationid": "', '"correlationid": "\\ud800', 1),
            lambda b: b.replace('"data": {', '"data": {"n": ' + "9" * 5000 + ", ", 1),
            lambda b: b.replace('"data": {', '"data": {"n": 1e999, ', 1),
            lambda b: b.replace('"data": {', '"data": {"n": -Infinity, ', 1),
            lambda b: b[: draw(st.integers(0, len(b) - 1))],
        ]))(body)
    return body


def batches(make: Any) -> st.SearchStrategy[list[str]]:
    low, high = BATCH
    return st.integers(low, high).flatmap(lambda n: st.tuples(*(make(i) for i in range(n))).map(list))


def schema_bodies(event_type: str) -> st.SearchStrategy[list[str]]:
    return batches(lambda i: from_contract(event_type).map(lambda data, i=i: as_body(delivered(envelope(event_type, data, i)))))


def mutated_bodies(event_type: str) -> st.SearchStrategy[list[str]]:
    return batches(lambda i: mutated(event_type, i))


STRATEGIES = {"schema": schema_bodies, "mutation": mutated_bodies}

# -- what a workflow may be given: by its rule (the above), or anything by StartExecution ---------------

JSON_LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(
    max_size=40) | st.sampled_from(EDGE_VALUES)
ANY_JSON = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=12) | st.sampled_from(["detail", "id", "source", "detail-type", "data", "correlationid"]),
    inner, max_size=4), max_leaves=12)


def nest(value: Any, depth: int, as_list: bool) -> Any:
    for _ in range(depth):
        value = [value] if as_list else {"v": value}
    return value


INPUT_KINDS = ("any", "detail", "deep", "large", "event")


@st.composite
def execution_input(draw: st.DrawFn, workflow: Workflow, index: int, kinds: tuple[str, ...] = INPUT_KINDS) -> str:
    """One input to a workflow's state machine, as JSON text: any JSON value (a string, a number, an array, null);
    an event whose detail is missing, not an object or odd; a valid-looking event, or anything, nested hundreds of
    levels deep; a string near Step Functions' 256 KiB."""
    event_type = workflow.accepts.type
    kind = draw(st.sampled_from(kinds))
    if kind == "any":
        value = draw(ANY_JSON)
    elif kind == "detail":
        value = delivered(draw(ANY_JSON), source="fuzz.producer", detail_type=event_type)
    elif kind == "deep":
        # Hundreds of levels; the first past what the local interpreter holds (about 490), the rest anywhere.
        depth = draw(st.sampled_from([600, 900, 300, 100]) | st.integers(100, 900))
        data = nest(draw(JSON_LEAVES), depth, draw(st.booleans()))
        value = delivered(envelope(event_type, data, index)) if draw(st.booleans()) else data
    elif kind == "large":
        value = delivered(envelope(event_type, {"text": "z" * draw(st.sampled_from([1, 200_000, 262_000]))}, index))
    else:
        value = delivered(envelope(event_type, draw(ANY_JSON), index))
    return json.dumps(value)


def execution_inputs(workflow: Workflow) -> st.SearchStrategy[list[str]]:
    return batches(lambda i: execution_input(workflow, i))
COUNTS: Counter[tuple[str, str]] = Counter()

# -- checking -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def consumers() -> dict[str, MemoryConsumer]:
    return {name: MemoryConsumer(consumer) for name, consumer in CONSUMERS.items()}


@pytest.fixture(scope="module")
def bus(template) -> tuple[dict[str, CompiledPattern], UnroutedCheck]:
    patterns = {k: r["Properties"]["EventPattern"] for k, r in template["Resources"].items()
                if r["Type"] == "AWS::Events::Rule" and not k.startswith(UNROUTED_CHECK_ID)  # not the catch-all
                and r["Properties"].get("EventBusName") != "default"}  # nor the workflows' nets, on the default bus
    rules = {name: compile_pattern(pattern) for name, pattern in patterns.items()}
    return rules, UnroutedCheck(patterns, result_sources=RESULT_SOURCES.values())


def check_bus(bodies: list[str], event_type: str, bus: tuple[dict[str, CompiledPattern], UnroutedCheck]) -> None:
    """One contract, one outcome: a valid input is taken by one rule of each component whose declaration takes it;
    one no rule takes (invalid, or from a producer its type's takers do not name) has a reason."""
    rules, check = bus
    for body in bodies:
        try:
            event = json.loads(body)  # repeated keys pass, as in EventBridge; NaN too: a channel other than PutEvents may carry it
        except (ValueError, RecursionError):
            continue  # not JSON: PutEvents would have refused it (MalformedDetail)
        if not isinstance(event.get("detail"), dict):
            continue
        valid, _ = contract_verdict(body, event_type)
        taken = [name for name, pattern in rules.items() if pattern.matches(event)]
        takers = declared_takers(event) if valid else set()
        if takers:
            assert len(taken) == len(takers), (taken, takers, body[:300])
        elif not taken:  # invalid, or valid from a producer no taker of its type names (sources=): unrouted
            verdict = check.verdict(body)
            assert verdict.status == "unrouted" and verdict.reason and verdict.error in (*REJECTION_ERRORS, "UnroutedEventError")


def check_consumer_batch(bodies: list[str], consumer: MemoryConsumer) -> None:
    report, outcomes = consumer.run(bodies)  # no crash: an exception here fails the test
    event_type = consumer.declaration.accepts.type
    valid_ids = Counter()
    for index, body in enumerate(bodies):
        outcome = report.outcomes[f"m-{index}"]
        valid, event_id = contract_verdict(body, event_type)
        if valid:
            again = valid_ids[event_id] > 0  # the same event twice in one batch (at-least-once delivery)
            valid_ids[event_id] += 1
            assert outcome.status in ("published", "duplicate") or (again and outcome.status == "in_progress") or (
                outcome.status == "rejected" and "different data" in outcome.reason), (outcome, body[:300])
        else:
            assert outcome.status == "rejected" and outcome.reason, (outcome, body[:300])
            assert f"m-{index}" in outcomes.rejected  # its destination: the invalid-events queue
    published = Counter(result.subject for result in outcomes.published)
    assert set(published) == set(valid_ids), "a result for every valid record and for nothing else"
    assert all(count == 1 for count in published.values()), "exactly one result per valid input"
    assert all(r.type == consumer.declaration.result_type and r.source == consumer.declaration.result_source
               for r in outcomes.published)


def check_accept(bodies: list[str], workflow: Workflow) -> None:
    claims = InMemoryClaimStore(scope=workflow.name, expires_after_seconds=60)
    accepted = Counter()
    for index, body in enumerate(bodies):
        try:
            event = json.loads(body)  # Step Functions hands Accept the parsed event
        except (ValueError, RecursionError):
            continue
        request = {"event": event, "workflow": workflow.name, "types": [workflow.accepts.type],
                   "emits": list(workflow.emits), "result_source": workflow.result_source, "execution": f"exec-{index}"}
        try:
            answer = accept(request, claims)
        except TransientError:  # another execution is accepting it right now: the state machine retries
            continue
        # Accept sees the event as Step Functions parsed it: a repeated key is already gone (the one
        # strictness the workflow path cannot have), NaN and lone surrogates are still there and refused.
        valid, event_id = contract_verdict(event, workflow.accepts.type)
        if valid:
            assert answer["status"] in ("accepted", "duplicate") or answer["error"] == "IdConflictError", answer
            accepted[event_id] += answer["status"] == "accepted"
        else:
            assert answer["status"] == "rejected" and answer["reason"] and answer["error"] in REJECTION_ERRORS, answer
        json.dumps(answer, allow_nan=False)  # what Accept returns, Step Functions must be able to carry
    assert all(count == 1 for count in accepted.values())


def check_workflow_inputs(texts: list[str], workflow: Workflow) -> None:
    """Whatever the state machine is given ends: its first state, Accept, answers it (accepted, a duplicate, or
    rejected with a reason, its failure event's ids readable without the input); and if the interpreter or the
    service cannot hold it, the execution's end gives the workflow's failure event, valid by its contract, with a
    reason and the input kept beside it (:func:`inferbus_lambda.execution_failures.report`)."""
    claims = InMemoryClaimStore(scope=workflow.name, expires_after_seconds=60)
    for index, text in enumerate(texts):
        try:
            value = json.loads(text)
        except RecursionError:
            value = None  # deeper than a parser holds: only the net sees it
        if value is not None:
            request = {"event": value, "workflow": workflow.name, "types": [workflow.accepts.type],
                       "emits": list(workflow.emits), "result_source": workflow.result_source, "execution": f"x-{index}"}
            try:
                answer = accept(request, claims)
            except TransientError:
                answer = None
            if answer is not None:
                assert answer["status"] in ("accepted", "duplicate", "rejected"), answer
                assert answer["status"] != "rejected" or (answer["reason"] and answer["error"]), answer
                assert answer["failure"]["id"] and answer["failure"]["correlationid"], answer
                json.dumps(answer, allow_nan=False)
        change = {"time": "2026-12-05T08:00:00Z", "detail": {
            "executionArn": f"arn:aws:states:us-east-1:123456789012:execution:m:x-{index}", "status": "FAILED",
            "input": text if len(text) < 240_000 else None, "error": "States.Runtime", "cause": "fuzz"}}
        failure = report(change, workflow=workflow.name, failure_type=workflow.failure, result_source=workflow.result_source)
        assert failure is not None and failure.reason and failure.error == "States.Runtime"
        event = from_put_events_entry({"Source": workflow.result_source, "DetailType": workflow.failure,
                                       "Detail": json.dumps(failure.event)})  # the contract takes it
        assert event.type == workflow.failure and event.data.execution.endswith(f"x-{index}")


def record(event_type: str, strategy: str, bodies: list[str]) -> None:
    COUNTS[(event_type, strategy)] += len(bodies)


def finish(event_type: str, strategy: str, path: str) -> None:
    count = COUNTS[(event_type, strategy)]
    report = os.environ.get("INFERBUS_FUZZ_REPORT")
    if report:
        with open(report, "a") as file:
            file.write(json.dumps({"input": event_type, "path": path, "strategy": strategy, "bodies": count,
                                   "profile": PROFILE}) + "\n")
    if LONG:
        assert count >= MIN_BODIES, f"{event_type}/{strategy}: only {count} bodies"


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("name", sorted(CONSUMERS))
def test_a_consumer_never_crashes_and_gives_each_record_one_outcome(consumers, bus, name, strategy):
    consumer = consumers[name]
    event_type = consumer.declaration.accepts.type

    @given(STRATEGIES[strategy](event_type))
    def run(bodies: list[str]) -> None:
        record(event_type, f"{strategy}:{name}", bodies)
        check_consumer_batch(bodies, consumer)
        check_bus(bodies, event_type, bus)

    run()
    finish(event_type, f"{strategy}:{name}", f"consumer {name}")


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.name for w in WORKFLOWS])
def test_a_workflows_accept_step_never_crashes_and_gives_each_event_one_outcome(workflow, strategy):
    event_type = workflow.accepts.type

    @given(STRATEGIES[strategy](event_type))
    def run(bodies: list[str]) -> None:
        record(event_type, f"{strategy}:{workflow.name}", bodies)
        check_accept(bodies, workflow)

    run()
    finish(event_type, f"{strategy}:{workflow.name}", f"workflow {workflow.name} (Accept)")


@pytest.mark.parametrize("workflow", ALL_WORKFLOWS, ids=[w.name for w in ALL_WORKFLOWS])
def test_every_input_a_workflow_is_given_ends_in_an_answer_or_a_reported_failure(workflow):
    @given(execution_inputs(workflow))
    def run(texts: list[str]) -> None:
        record(workflow.accepts.type, f"execution-input:{workflow.name}", texts)
        check_workflow_inputs(texts, workflow)

    run()
    finish(workflow.accepts.type, f"execution-input:{workflow.name}", f"workflow {workflow.name} (any input)")


EMBEDDED_INPUTS = 20  # per workflow and kind of input, in the long profile: each runs the real state machine on moto


@pytest.fixture(scope="module")
def embedded(template):
    with LocalPipeline(template) as running:
        yield running


@pytest.mark.skipif(not LONG, reason="the long profile (make fuzz); tests/functional/test_execution_failures.py runs "
                    "the named cases on the embedded stack in every run")
@pytest.mark.parametrize("workflow", ALL_WORKFLOWS, ids=[w.name for w in ALL_WORKFLOWS])
def test_on_the_embedded_stack_every_execution_ends_in_a_result_a_failure_event_or_a_wait(embedded, workflow):
    """The same inputs through the real state machine: each execution ends with an event that names it (its
    failure event, from its states or from the net) or succeeds, or waits for a person (a task token)."""
    machine = embedded.state_machine(workflow.name)
    texts: list[str] = []
    for kind in INPUT_KINDS:  # every kind, however the draws fall

        @settings(max_examples=EMBEDDED_INPUTS, database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @given(execution_input(workflow, 0, (kind,)))
        def draw(text: str) -> None:
            texts.append(text)

        draw()  # started below, outside Hypothesis: it raises the recursion limit while it runs, moto's interpreter's too
    record(workflow.accepts.type, f"embedded:{workflow.name}", texts)
    embedded.tapped_events()  # what earlier tests left
    arns = [embedded.stepfunctions.start_execution(stateMachineArn=machine.arn, name=f"fuzz-{uuid.uuid4().hex}",
                                                   input=text)["executionArn"]
            for text in texts if len(text.encode()) <= 256 * 1024]  # a larger one the API refuses: nothing starts
    embedded.drain()
    failed = {e["detail"]["data"]["execution"] for e in embedded.tapped_events()
              if e["source"] == workflow.result_source and e["detail-type"] == workflow.failure}
    ended = {e.arn: e for e in embedded.executions(machine.logical_id)}
    for arn in arns:
        execution = ended[arn]
        assert arn in failed or execution.status == "SUCCEEDED" or execution.waiting_for_task_token, (
            execution.status, execution.error, json.dumps(execution.input)[:200])


def test_the_poison_records_of_the_issue_fail_nothing_but_themselves(consumers):
    """A 5,000-digit integer, a repeated key, NaN and a body the parser cannot even read, beside 20 valid records."""
    consumer = consumers[sorted(CONSUMERS)[0]]
    event_type = consumer.declaration.accepts.type
    valid = [as_body(delivered(envelope(event_type, SAMPLES[event_type][i % len(SAMPLES[event_type])]["data"], i)))
             for i in range(20)]
    poison = [valid[0].replace('"data": {', '"data": {"n": ' + "7" * 5000 + ", ", 1),
              valid[1].replace('"correlationid": ', '"correlationid": "x", "correlationid": ', 1),
              valid[2].replace('"data": {', '"data": {"n": NaN, ', 1)]
    original = consumer.consumer.parse
    consumer.consumer.parse = lambda body: (_ for _ in ()).throw(TypeError("unforeseen")) if body == "boom" else original(body)
    try:
        report, outcomes = consumer.run(valid[3:] + poison + ["boom"])
    finally:
        consumer.consumer.parse = original
    assert len(outcomes.published) == 17 and len(outcomes.rejected) == 4
    reasons = sorted(o.reason for o in report.outcomes.values() if o.status == "rejected")
    assert [r.split(" (")[0] for r in reasons] == ["body: could not be read", "body: not valid JSON",
                                                   "body: not valid JSON", "body: not valid JSON"]
