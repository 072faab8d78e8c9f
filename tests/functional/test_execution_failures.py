"""Every workflow input ends somewhere, even one its state machine cannot hold: on the embedded stack.

An input nested deeper than the interpreter holds fails the execution with ``States.Runtime``
before its first state, where no ``Catch`` reaches; so does a stop. How such an execution ended
reaches the workflow's net (a Standard one's status change on the default bus, as AWS sends it;
an Express one's execution-log record through its subscription), which publishes its failure
event and keeps what told of it with the reason in the invalid-events queue. The workflows come
from the declarations.
"""

from __future__ import annotations

import json
import warnings

import pytest
from hypothesis.errors import NonInteractiveExampleWarning
from hypothesis_jsonschema import from_schema
from inferbus_lambda.contracts import data_model, from_eventbridge_event

from inferbus.local import LocalPipeline
from tests.declared import PIPELINE, RESULT_SOURCES, declared_takers
from tests.fuzz.harness import contract_verdict, delivered

WORKFLOWS = list(PIPELINE.workflows)
STANDARD = [w for w in WORKFLOWS if not w.express]
DEPTH = 600  # past what the local interpreter holds (it copies each state's input recursively)


@pytest.fixture(scope="module")
def running(template):
    with LocalPipeline(template) as started:
        yield started


@pytest.fixture
def pipeline(running):
    running.tapped_events()  # each test reads what its own inputs made
    return running


def newest_execution(pipeline, workflow):
    return pipeline.executions(pipeline.state_machine(workflow.name).logical_id)[-1]


def nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = {"v": value}
    return value


def matching_event(workflow) -> dict:
    """A valid event of the workflow's input type that its rule takes (from the contract's schema, checked by it)."""
    sources = [RESULT_SOURCES[p.name] for p in workflow.accepts.sources] or ["inferbus.test"]

    def event(data: dict) -> dict:
        return {"specversion": "1.0", "id": "deep-input-1", "source": sources[0], "type": workflow.accepts.type,
                "time": "2026-12-05T08:00:00Z", "correlationid": "req-deep-1", "datacontenttype": "application/json",
                "data": data}

    schema = from_schema(data_model(workflow.accepts.type).model_json_schema())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonInteractiveExampleWarning)  # examples outside a test: what is wanted here
        for _ in range(500):
            candidate = event(schema.example())
            if workflow.name in declared_takers({"source": sources[0], "detail-type": workflow.accepts.type,
                                                 "detail": candidate}) and contract_verdict(
                    delivered(candidate), workflow.accepts.type)[0]:
                return candidate
    raise AssertionError(f"no event of {workflow.accepts.type} from its schema that {workflow.name}'s rule takes")


def failure_events(pipeline, workflow):
    return [from_eventbridge_event(e) for e in pipeline.tapped_events()
            if e["source"] == workflow.result_source and e["detail-type"] == workflow.failure]


def assert_reported_and_kept(pipeline, workflow, *, error: str, input_id: str | None) -> dict:
    """One failure event with the error and the reason, and one kept copy of what told of the end; returns that."""
    (failed,) = failure_events(pipeline, workflow)
    # An Express workflow's log record has no input: its input id is not known.
    input_id = None if workflow.express else input_id
    assert (failed.data.workflow, failed.data.error, failed.data.input_id) == (workflow.name, error, input_id)
    assert failed.data.cause and error in failed.data.cause
    (kept,) = [m for m in pipeline.invalid_events() if m["consumer"] == workflow.name and failed.data.execution in m["body"]]
    assert (kept["error"], kept["reason"], kept["event_id"]) == (error, failed.data.cause, input_id)
    told = json.loads(kept["body"])  # a status change (the input inside), or an execution-log record
    assert (told.get("execution_arn") if workflow.express else told["detail"]["executionArn"]) == failed.data.execution
    return told


def role_of(pipeline, source: str) -> str | None:
    """The producer role a source is reserved to by the bus policy (a workflow fed by another's results), or None."""
    try:
        return pipeline.producer_role(source)
    except KeyError:
        return None


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.name for w in WORKFLOWS])
def test_a_deeply_nested_event_through_the_rule_ends_in_a_failure_event_and_a_kept_copy(pipeline, workflow):
    event = matching_event(workflow)
    event["data"]["extra"] = nested(DEPTH)
    assert pipeline.put_events([{"Source": event["source"], "DetailType": event["type"], "Detail": json.dumps(event),
                                 "EventBusName": pipeline.bus_name}], as_role=role_of(pipeline, event["source"])) == []
    pipeline.drain()
    execution = newest_execution(pipeline, workflow)
    assert (execution.status, execution.error) == ("FAILED", "States.Runtime")
    told = assert_reported_and_kept(pipeline, workflow, error="States.Runtime", input_id="deep-input-1")
    if not workflow.express:
        assert json.loads(told["detail"]["input"])["detail"]["data"]["extra"] == nested(DEPTH)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.name for w in WORKFLOWS])
def test_a_deeply_nested_input_started_directly_ends_in_a_failure_event_and_a_kept_copy(pipeline, workflow):
    deep = {"detail": nested(DEPTH)}  # not even an event
    machine = pipeline.state_machine(workflow.name)
    pipeline.stepfunctions.start_execution(stateMachineArn=machine.arn, name=f"deep-{workflow.name}", input=json.dumps(deep))
    pipeline.drain()
    told = assert_reported_and_kept(pipeline, workflow, error="States.Runtime", input_id=None)
    if not workflow.express:
        assert json.loads(told["detail"]["input"]) == deep


@pytest.mark.skipif(not STANDARD, reason="no Standard workflow is declared (an Express execution runs to its end)")
@pytest.mark.parametrize("workflow", STANDARD, ids=[w.name for w in STANDARD])
def test_a_stopped_execution_passes_no_state_and_still_ends_in_a_failure_event(pipeline, workflow):
    machine = pipeline.state_machine(workflow.name)
    event = matching_event(workflow)
    event["id"] = "to-stop-1"
    arn = pipeline.stepfunctions.start_execution(stateMachineArn=machine.arn, name=f"stop-{workflow.name}",
                                                 input=json.dumps(delivered(event)))["executionArn"]
    pipeline.stepfunctions.stop_execution(executionArn=arn, error="Operator", cause="stopped by hand")
    pipeline.drain()
    execution = newest_execution(pipeline, workflow)
    if execution.status != "ABORTED":
        pytest.skip(f"the execution ended {execution.status} before the stop reached it: {execution.error} {execution.cause}")
    # The stop's own error when the service keeps it (moto does not), else the status.
    assert_reported_and_kept(pipeline, workflow, error=execution.error or "ExecutionAborted", input_id="to-stop-1")


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.name for w in WORKFLOWS])
def test_a_failure_its_states_reported_is_not_reported_twice(pipeline, workflow):
    machine = pipeline.state_machine(workflow.name)
    # No name: Step Functions names it (moto named every such execution "None").
    pipeline.stepfunctions.start_execution(stateMachineArn=machine.arn, input=json.dumps("not an event"))
    pipeline.drain()
    execution = newest_execution(pipeline, workflow)
    assert (execution.status, execution.error) == ("FAILED", "WorkflowFailed")
    (failed,) = failure_events(pipeline, workflow)
    assert failed.data.error == "InvalidEventError"
