"""The net for executions that ended outside a workflow's states: which status changes it reports, and how."""

from __future__ import annotations

import json

import pytest
from inferbus_lambda.contracts import from_put_events_entry
from inferbus_lambda.execution_failures import PROTOCOL_ERROR, from_execution_log, report

from tests.declared import PIPELINE

WORKFLOWS = list(PIPELINE.workflows)


def nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = {"v": value}
    return value


def change(status: str, *, error: str | None = None, cause: str | None = None, execution_input: str | None = "{}") -> dict:
    return {"version": "0", "id": "c-1", "detail-type": "Step Functions Execution Status Change", "source": "aws.states",
            "time": "2026-12-05T08:00:00Z", "detail": {
                "executionArn": "arn:aws:states:us-east-1:123456789012:execution:M:e-1",
                "stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:M", "name": "e-1",
                "status": status, "input": execution_input, "error": error, "cause": cause}}


def reported(workflow, status_change):
    return report(status_change, workflow=workflow.name, failure_type=workflow.failure, result_source=workflow.result_source)


def as_event(workflow, failure):
    """The failure event read back through the contracts, as a subscriber reads it."""
    return from_put_events_entry({"Source": workflow.result_source, "DetailType": workflow.failure,
                                  "Detail": json.dumps(failure.event)})


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.name for w in WORKFLOWS])
def test_an_execution_its_states_reported_or_that_did_not_fail_is_not_reported_again(workflow):
    assert reported(workflow, change("FAILED", error=PROTOCOL_ERROR, cause="See the event")) is None
    assert reported(workflow, change("SUCCEEDED")) is None
    assert reported(workflow, change("RUNNING")) is None


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.name for w in WORKFLOWS])
def test_a_deeply_nested_input_the_interpreter_could_not_hold_gets_its_failure_event_with_its_ids(workflow):
    execution_input = {"version": "0", "id": "bridge-1", "source": "producer", "detail-type": workflow.accepts.type,
                       "detail": {"id": "evt-7", "correlationid": "req-7", "data": {"deep": nested(600)}}}
    failure = reported(workflow, change("FAILED", error="States.Runtime", cause="RecursionError(maximum recursion depth)",
                                        execution_input=json.dumps(execution_input)))
    event = as_event(workflow, failure)
    assert (event.type, event.source, event.data.workflow) == (workflow.failure, workflow.result_source, workflow.name)
    assert (event.data.input_id, event.subject, event.correlationid) == ("evt-7", "evt-7", "req-7")
    assert event.data.error == "States.Runtime" and "RecursionError" in event.data.cause and "FAILED" in failure.reason
    # The id the protocol's own failure path would have given it: a report twice is one event.
    assert event.id == reported(workflow, change("FAILED", error="States.Runtime",
                                                 execution_input=json.dumps(execution_input))).event["id"]


@pytest.mark.parametrize("execution_input", [None, "{\"v\": " * 5000 + "1" + "}" * 5000, '"a string"', "42", "null", "[1, 2]",
                                             '{"detail": "not an object"}', '{"detail": {"id": "has spaces"}}', "{"],
                         ids=["not-included", "too-deep-to-parse", "string", "number", "null", "array", "odd-detail",
                              "bad-id", "not-json"])
def test_an_input_whose_id_cannot_be_read_is_reported_under_an_id_from_the_execution(execution_input):
    workflow = WORKFLOWS[0]
    failure = reported(workflow, change("FAILED", error="States.DataLimitExceeded", execution_input=execution_input))
    event = as_event(workflow, failure)
    assert event.data.input_id is None and event.subject is None
    assert event.id == reported(workflow, change("FAILED", error="States.DataLimitExceeded")).event["id"]
    assert event.data.execution.endswith(":e-1")


@pytest.mark.parametrize(("status", "error"), [("TIMED_OUT", "ExecutionTimedOut"), ("ABORTED", "ExecutionAborted")])
def test_a_timeout_or_a_stop_passes_no_state_and_is_reported_with_its_status(status, error):
    workflow = WORKFLOWS[-1]
    event = as_event(workflow, reported(workflow, change(status)))
    assert event.data.error == error and status in event.data.cause


def test_what_is_no_status_change_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="executionArn"):
        report({"detail": {"status": "FAILED"}}, workflow="w", failure_type="WFailed", result_source="s")


def logged(*records: dict) -> dict:
    """What a CloudWatch Logs subscription invokes its function with."""
    import base64
    import gzip

    batch = {"messageType": "DATA_MESSAGE", "logGroup": "g", "logEvents": [
        {"id": str(i), "timestamp": 0, "message": json.dumps(record)} for i, record in enumerate(records)]}
    return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(batch).encode())).decode()}}


def test_an_express_executions_log_tells_of_its_ends_and_nothing_else():
    arn = "arn:aws:states:us-east-1:123456789012:express:M:e-2:0d5c"
    payload = logged({"type": "ExecutionStarted", "execution_arn": arn, "details": {}},
                     {"type": "ExecutionFailed", "execution_arn": arn, "event_timestamp": "1764921600000",
                      "details": {"error": "States.Runtime", "cause": "too deep"}},
                     {"type": "ExecutionTimedOut", "execution_arn": arn, "details": {}},
                     {"type": "TaskStateEntered", "execution_arn": arn, "details": {"name": "Accept"}})
    changes = from_execution_log(payload)
    assert [change["detail"]["status"] for change, _ in changes] == ["FAILED", "TIMED_OUT"]
    workflow = WORKFLOWS[0]
    failed, timed_out = (as_event(workflow, reported(workflow, change)) for change, _ in changes)
    assert (failed.data.error, failed.data.input_id, failed.data.execution) == ("States.Runtime", None, arn)
    assert "too deep" in failed.data.cause and failed.time.year == 2025
    assert timed_out.data.error == "ExecutionTimedOut"
    assert json.loads(changes[0][1])["type"] == "ExecutionFailed"  # what is kept: the record itself
