"""State machines on the embedded runtime: real ASL on moto, Lambda tasks running the handlers in-process."""

from __future__ import annotations

import json
import time

import pytest

from inferbus.runtime import EmbeddedPipeline
from tests.runtime_fixtures import runtime
from tests.runtime_fixtures import templates as t

RETRY = [{"ErrorEquals": ["TransientError"], "IntervalSeconds": 1, "MaxAttempts": 2, "BackoffRate": 1.0}]
# A flaky task: retried on TransientError; once retries are spent, a failure event goes on the bus.
FLAKY_ASL = {
    "StartAt": "Flaky",
    "States": {
        "Flaky": t.task("Flaky", "Done", Retry=RETRY,
                        Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "PublishFailure"}]),
        "PublishFailure": {
            "Type": "Task",
            "Resource": "arn:aws:states:::events:putEvents",
            "Parameters": {"Entries": [{"EventBusName": "${EventBusName}", "Source": "runtime.test",
                                        "DetailType": "FlakyFailed", "Detail.$": "$"}]},
            "ResultPath": None,
            "Next": "Failed",
        },
        "Failed": {"Type": "Pass", "End": True},
        "Done": {"Type": "Succeed"},
    },
}
# A human review: the token goes to a queue, the execution waits; ${ReviewTimeoutSeconds} is a bare number.
REVIEW_ASL = """{
  "StartAt": "Review",
  "States": {
    "Review": {
      "Type": "Task",
      "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
      "Parameters": {"QueueUrl": "${ReviewQueueUrl}", "MessageBody": {"token.$": "$$.Task.Token", "input.$": "$"}},
      "TimeoutSeconds": ${ReviewTimeoutSeconds},
      "Next": "Decide"
    },
    "Decide": {"Type": "Choice", "Choices": [{"Variable": "$.approved", "BooleanEquals": true, "Next": "Echo"}],
               "Default": "Rejected"},
    "Echo": %s,
    "Rejected": {"Type": "Fail", "Error": "Rejected", "Cause": "a reviewer said no"}
  }
}""" % json.dumps(t.task("Echo"))


def flaky_template(machine_type: str = "STANDARD") -> dict:
    substitutions = t.function_arn("Flaky") | {"EventBusName": {"Ref": t.BUS}}
    return t.template(Flaky=t.function("flaky", tag="flaky", FAIL_TIMES="1"),
                      Machine=t.state_machine(FLAKY_ASL, substitutions, machine_type=machine_type))


def start(pipeline: EmbeddedPipeline, logical_id: str, payload: dict, name: str = "run-1") -> str:
    arn = pipeline.state_machines[logical_id].arn
    return pipeline.stepfunctions.start_execution(stateMachineArn=arn, name=name, input=json.dumps(payload))["executionArn"]


@pytest.mark.parametrize("machine_type", ["EXPRESS", "STANDARD"])
def test_task_invokes_the_handler_in_process_and_returns_its_result(machine_type):
    asl = {"StartAt": "Echo", "States": {"Echo": t.task("Echo")}}
    template = t.template(Echo=t.function("echo", tag="echo-tag"),
                          Machine=t.state_machine(asl, t.function_arn("Echo"), machine_type=machine_type))
    with runtime(template, tap=False) as pipeline:
        assert pipeline.state_machines["Machine"].type == machine_type
        start(pipeline, "Machine", {"hello": "world"})
        pipeline.drain(timeout_s=10)
        (execution,) = pipeline.executions("Machine")
        assert execution.status == "SUCCEEDED"
        assert execution.input == {"hello": "world"}
        assert execution.output == {"echo": {"hello": "world"}, "tag": "echo-tag"}  # the function's own environment
        assert execution.states["Echo"].visits == 1 and execution.states["Echo"].duration_ms >= 0
        assert execution.start_date <= execution.states["Echo"].entered <= execution.stop_date
        (invocation,) = pipeline.functions["Echo"].invocations
        assert invocation.trigger == "invoke" and invocation.error is None


def test_a_direct_function_arn_task_runs_through_the_adapter():
    arn = "arn:aws:lambda:us-east-1:123456789012:function:RuntimeTest-Echo"
    asl = {"StartAt": "Echo", "States": {"Echo": {"Type": "Task", "Resource": "${EchoArn}", "End": True}}}
    template = t.template(Echo=t.function("echo", tag="direct"), Machine=t.state_machine(asl, t.function_arn("Echo")))
    with runtime(template, tap=False) as pipeline:
        assert arn in pipeline.state_machines["Machine"].definition
        pipeline.stepfunctions.start_execution(stateMachineArn=pipeline.state_machines["Machine"].arn, name="d", input="{}")
        pipeline.drain(timeout_s=10)
        (execution,) = pipeline.executions()
        assert execution.output == {"echo": {}, "tag": "direct"}


def test_retry_on_the_handlers_custom_error_then_success():
    with runtime(flaky_template(), tap=False) as pipeline:
        start(pipeline, "Machine", {"key": "a"})
        pipeline.drain(timeout_s=10)
        (execution,) = pipeline.executions()
        assert execution.status == "SUCCEEDED", execution
        assert execution.output == {"key": "a", "attempts": 2}
        first, second = pipeline.functions["Flaky"].invocations
        assert first.error_type == "TransientError" and second.error is None
        assert execution.states["Flaky"].visits == 1  # a Retry stays in the state
        assert execution.states["Flaky"].duration_ms >= 900  # IntervalSeconds: 1, in real time


def test_catch_after_retries_are_spent_publishes_a_failure_event():
    with runtime(flaky_template("EXPRESS")) as pipeline:
        pipeline.functions["Flaky"].set_environment(FAIL_TIMES="99")  # fault injection, switched on in one step
        start(pipeline, "Machine", {"key": "b"})
        pipeline.drain(timeout_s=10)
        (execution,) = pipeline.executions()
        assert execution.status == "SUCCEEDED"
        assert execution.output["error"]["Error"] == "TransientError"
        cause = json.loads(execution.output["error"]["Cause"])  # Lambda's unhandled-error payload
        assert cause["errorType"] == "TransientError" and cause["errorMessage"] == "attempt 3 of b failed"
        assert cause["stackTrace"] and all(isinstance(line, str) for line in cause["stackTrace"])
        assert len(pipeline.functions["Flaky"].invocations) == 3  # 1 + MaxAttempts 2
        assert list(execution.states) == ["Flaky", "PublishFailure", "Failed"]
        (published,) = [e for e in pipeline.tapped_events() if e["detail-type"] == "FlakyFailed"]
        assert published["detail"]["key"] == "b"


def test_an_always_failing_task_fails_the_execution_with_the_error_type():
    asl = {"StartAt": "Broken", "States": {"Broken": t.task("Broken")}}
    template = t.template(Broken=t.function("broken"), Machine=t.state_machine(asl, t.function_arn("Broken")))
    with runtime(template, tap=False) as pipeline:
        start(pipeline, "Machine", {})
        pipeline.drain(timeout_s=10)
        (execution,) = pipeline.executions()
        assert execution.status == "FAILED"
        assert execution.error == "ValueError"
        assert json.loads(execution.cause)["errorMessage"] == "broken on purpose"


def review_template() -> dict:
    substitutions = t.function_arn("Echo") | {"ReviewQueueUrl": {"Ref": "ReviewQueue"}, "ReviewTimeoutSeconds": "86400"}
    return t.template(Echo=t.function("echo", tag="echo"), ReviewQueue=t.queue(),
                      Machine=t.state_machine(REVIEW_ASL, substitutions),
                      MachineRule=t.rule("ReviewRequested", [t.state_machine_target("Machine")]))


def review_tokens(pipeline: EmbeddedPipeline) -> list[str]:
    url = pipeline.deployment.queues["ReviewQueue"].url
    messages = pipeline.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(message["Body"])["token"] for message in messages]


def test_a_task_token_wait_parks_without_holding_drain_up_and_resumes_on_success():
    with runtime(review_template(), tap=False) as pipeline:
        entry = {"EventBusName": pipeline.bus_name, "Source": "runtime.test", "DetailType": "ReviewRequested",
                 "Detail": json.dumps({"approved": True})}
        assert pipeline.put_events([entry, entry]) == []
        started = time.monotonic()
        pipeline.drain(timeout_s=10)
        assert time.monotonic() - started < 8  # well before drain would give up (10 s)
        parked = pipeline.executions()
        assert [(e.status, e.waiting_for_task_token) for e in parked] == [("RUNNING", True)] * 2
        assert parked[0].states["Review"].exited is None

        approve, reject = review_tokens(pipeline)
        pipeline.stepfunctions.send_task_success(taskToken=approve, output=json.dumps({"approved": True}))
        pipeline.stepfunctions.send_task_failure(taskToken=reject, error="ReviewerUnavailable", cause="dropped by moto")
        pipeline.drain(timeout_s=10)
        by_status = {e.status: e for e in pipeline.executions()}
        assert by_status["SUCCEEDED"].output == {"echo": {"approved": True}, "tag": "echo"}
        assert list(by_status["SUCCEEDED"].states) == ["Review", "Decide", "Echo"]
        assert by_status["FAILED"].error == "ReviewerUnavailable"
        assert not by_status["FAILED"].cause  # moto 5.2.5's SendTaskFailure drops the cause


def test_drain_waits_for_a_retrying_branch_beside_a_parked_one():
    review = json.loads(REVIEW_ASL.replace("${ReviewTimeoutSeconds}", "3600"))["States"]["Review"] | {"End": True}
    del review["Next"]
    asl = {"StartAt": "Both", "States": {"Both": {"Type": "Parallel", "End": True, "Branches": [
        {"StartAt": "Review", "States": {"Review": review}},
        {"StartAt": "Flaky", "States": {"Flaky": t.task("Flaky", Retry=RETRY)}},
    ]}}}
    substitutions = t.function_arn("Flaky") | {"ReviewQueueUrl": {"Ref": "ReviewQueue"}}
    template = t.template(Flaky=t.function("flaky", FAIL_TIMES="1"), ReviewQueue=t.queue(),
                          Machine=t.state_machine(asl, substitutions))
    with runtime(template, tap=False) as pipeline:
        start(pipeline, "Machine", {"key": "p"})
        pipeline.drain(timeout_s=10)
        # drain returned only once the retried branch was done: what is left waits for a person.
        assert [i.error for i in pipeline.functions["Flaky"].invocations] == ["TransientError: attempt 1 of p failed", None]
        (execution,) = pipeline.executions()
        assert execution.status == "RUNNING" and execution.waiting_for_task_token
        (token,) = review_tokens(pipeline)
        pipeline.stepfunctions.send_task_success(taskToken=token, output=json.dumps({"approved": False}))
        pipeline.drain(timeout_s=10)
        (execution,) = pipeline.executions()
        assert execution.output == [{"approved": False}, {"key": "p", "attempts": 2}]


def test_drain_raises_a_clear_error_when_an_execution_does_not_settle():
    asl = {"StartAt": "Sleep", "States": {"Sleep": {"Type": "Wait", "Seconds": 60, "End": True}}}
    with runtime(t.template(Machine=t.state_machine(asl, {})), tap=False) as pipeline:
        start(pipeline, "Machine", {}, name="sleeper")
        with pytest.raises(RuntimeError, match=r"not quiescent after 0.5 s: executions still running \['sleeper'\]"):
            pipeline.drain(timeout_s=0.5)
    # Leaving the pipeline stopped the execution; its worker thread no longer matters.


def test_handler_output_is_captured_per_function_while_executions_run_on_threads(capsys):
    asl = {"StartAt": "Echo", "States": {"Echo": t.task("Echo")}}
    template = t.template(
        Echo=t.function("echo", tag="step"),
        Consumer=t.function("consumer", tag="consumer"),
        WorkQueue=t.queue(),
        ConsumerSource=t.event_source("Consumer", "WorkQueue", batch_size=5),
        Machine=t.state_machine(asl, t.function_arn("Echo"), machine_type="EXPRESS"),
        MachineRule=t.rule("Work", [t.state_machine_target("Machine"), t.queue_target("WorkQueue", "Target1")]),
    )
    with runtime(template, tap=False) as pipeline:
        # A slow execution: the main thread prints while its handler owns stdout.
        start(pipeline, "Machine", {"sleep_s": 0.3}, name="slow")
        deadline = time.monotonic() + 5
        while not pipeline.functions["Echo"].logs and time.monotonic() < deadline:
            time.sleep(0.01)
        print("from the main thread")
        entries = [{"EventBusName": pipeline.bus_name, "Source": "runtime.test", "DetailType": "Work",
                    "Detail": json.dumps({"n": n})} for n in range(20)]
        pipeline.put_events(entries)
        pipeline.drain(timeout_s=15)

        echo, consumer = pipeline.functions["Echo"], pipeline.functions["Consumer"]
        assert {line["tag"] for line in echo.logs} == {"step"} and len(echo.logs) == 21
        assert {line["tag"] for line in consumer.logs} == {"consumer"} and len(consumer.logs) == 20
        assert echo.metrics == {"Echoes": [1] * 21}
        assert consumer.metrics.keys() == {"Consumed"} and sum(consumer.metrics["Consumed"]) == 20
        assert all(e.status == "SUCCEEDED" for e in pipeline.executions())
    assert "from the main thread" in capsys.readouterr().out


def test_the_uncopied_history_read_for_drain_is_the_api_s_history():
    """drain reads running executions' histories from moto's list without its deep copy
    (moto_patches.running_execution_events): the same events GetExecutionHistory gives, for the running ones only."""
    from inferbus.runtime import moto_patches

    with runtime(review_template(), tap=False) as pipeline:
        entry = {"EventBusName": pipeline.bus_name, "Source": "runtime.test", "DetailType": "ReviewRequested",
                 "Detail": json.dumps({"approved": True})}
        pipeline.put_events([entry])
        pipeline.drain(timeout_s=10)
        (parked,) = pipeline.executions()
        read = moto_patches.running_execution_events()
        assert list(read) == [parked.arn]
        by_api = pipeline.stepfunctions.get_execution_history(executionArn=parked.arn)["events"]
        assert [(e["id"], e["type"], e.get("previousEventId")) for e in read[parked.arn]] == \
            [(e["id"], e["type"], e.get("previousEventId")) for e in by_api]
        (token,) = review_tokens(pipeline)
        pipeline.stepfunctions.send_task_success(taskToken=token, output=json.dumps({"approved": True}))
        pipeline.drain(timeout_s=10)
        assert moto_patches.running_execution_events() == {}
