"""The embedded runtime tells how executions end as AWS does: a Standard one's status change on the
default bus (AWS sends none for Express), and names an execution started without a name."""

from __future__ import annotations

import json
import time

from inferbus.runtime import embedded
from tests.runtime_fixtures import runtime
from tests.runtime_fixtures import templates as t

FAILING = {"StartAt": "Boom", "States": {"Boom": {"Type": "Fail", "Error": "Boom", "Cause": "on purpose"}}}
PASSING = {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}
ENDS = {"Type": "AWS::Events::Rule", "Properties": {  # on the default bus, as a net's rule is
    "EventPattern": {"source": ["aws.states"], "detail-type": ["Step Functions Execution Status Change"]},
    "State": "ENABLED", "Targets": [t.queue_target("Ends")]}}


def told(pipeline) -> list[dict]:
    url = pipeline.deployment.queues["Ends"].url
    return [json.loads(m["Body"]) for m in pipeline.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])]


def test_a_standard_executions_end_goes_to_the_default_bus_and_an_express_ones_does_not():
    template = t.template(Ends=t.queue(), EndsRule=ENDS,
                          Standard=t.state_machine(FAILING, {}, machine_type="STANDARD", name="standard"),
                          Passing=t.state_machine(PASSING, {}, machine_type="STANDARD", name="passing"),
                          Express=t.state_machine(FAILING, {}, machine_type="EXPRESS", name="express"))
    with runtime(template, tap=False) as pipeline:
        machines = pipeline.state_machines
        failed = pipeline.stepfunctions.start_execution(stateMachineArn=machines["Standard"].arn, name="f",
                                                        input=json.dumps({"deep": [[["x"]]]}))["executionArn"]
        passed = pipeline.stepfunctions.start_execution(stateMachineArn=machines["Passing"].arn, name="p")["executionArn"]
        pipeline.stepfunctions.start_execution(stateMachineArn=machines["Express"].arn, name="e")
        pipeline.drain()
        changes = {change["detail"]["executionArn"]: change for change in told(pipeline)}
    assert set(changes) == {failed, passed}
    change = changes[failed]
    assert (change["source"], change["detail-type"], change["resources"]) == (
        "aws.states", "Step Functions Execution Status Change", [failed])
    detail = change["detail"]
    assert (detail["status"], detail["error"], detail["cause"], detail["stateMachineArn"]) == (
        "FAILED", "Boom", "on purpose", machines["Standard"].arn)
    assert json.loads(detail["input"]) == {"deep": [[["x"]]]} and detail["inputDetails"] == {"included": True}
    assert changes[passed]["detail"]["status"] == "SUCCEEDED"


def test_an_execution_started_without_a_name_is_named_as_aws_names_it():
    with runtime(t.template(Machine=t.state_machine(PASSING, {}, machine_type="STANDARD")), tap=False) as pipeline:
        arn = pipeline.state_machines["Machine"].arn
        first, second = (pipeline.stepfunctions.start_execution(stateMachineArn=arn)["executionArn"] for _ in range(2))
        pipeline.drain()
        names = [e.name for e in pipeline.executions("Machine")]
    assert first != second and not first.endswith(":None") and sorted(names) == sorted(a.rsplit(":", 1)[1] for a in (first, second))


def ended(pipeline, count: int) -> None:
    """Wait until ``count`` executions have ended and wait for their status change to be told."""
    deadline = time.monotonic() + 30
    while pipeline.status_changes.waiting < count:
        assert time.monotonic() < deadline, f"{pipeline.status_changes.waiting} of {count} executions ended"
        time.sleep(0.01)


def every_told(pipeline) -> list[dict]:
    changes, batch = [], told(pipeline)
    while batch:
        changes, batch = changes + batch, told(pipeline)
    return changes


def test_an_execution_a_window_would_forget_stays_until_its_end_is_told(monkeypatch):
    """``serve`` keeps a window of finished executions; one that ends while the dispatcher is busy must not
    fall out of it before its status change is put (a soak lost every later result when it did)."""
    monkeypatch.setattr(embedded, "TRIM_EVERY_S", 0.0)  # trim at every change, as a busy serve does once a second
    template = t.template(Ends=t.queue(), EndsRule=ENDS,
                          Passing=t.state_machine(PASSING, {}, machine_type="STANDARD", name="passing"))
    with runtime(template, tap=False, retain=1) as pipeline:  # not started: nothing dispatches until pump()
        arns = [pipeline.stepfunctions.start_execution(stateMachineArn=pipeline.state_machines["Passing"].arn,
                                                       name=f"p{n}")["executionArn"] for n in range(12)]
        ended(pipeline, len(arns))
        assert pipeline.pump() == len(arns)
        machine = pipeline.state_machines["Passing"].arn
        last = pipeline.stepfunctions.start_execution(stateMachineArn=machine, name="last")["executionArn"]
        ended(pipeline, 1)  # its end trims the window (one execution) of those told; "last" is not told yet
        assert [item["name"] for item in pipeline.stepfunctions.list_executions(stateMachineArn=machine)["executions"]] == [
            "last", "p11"]
        pipeline.pump()
        assert sorted(change["detail"]["executionArn"] for change in every_told(pipeline)) == sorted([*arns, last])
        assert pipeline.status_changes.vanished == 0


def test_an_execution_gone_before_its_end_is_told_is_counted_and_the_others_are_told():
    template = t.template(Ends=t.queue(), EndsRule=ENDS,
                          Passing=t.state_machine(PASSING, {}, machine_type="STANDARD", name="passing"))
    with runtime(template, tap=False) as pipeline:
        arn = pipeline.state_machines["Passing"].arn
        pipeline.status_changes.ended(arn.replace(":stateMachine:", ":execution:") + ":never-ran")
        real = pipeline.stepfunctions.start_execution(stateMachineArn=arn, name="real")["executionArn"]
        ended(pipeline, 2)
        assert not pipeline.status_changes.told(real)  # not forgettable yet, whatever a window says
        assert pipeline.pump() == 1 and pipeline.status_changes.told(real)
        assert [change["detail"]["executionArn"] for change in every_told(pipeline)] == [real]
        assert pipeline.status_changes.vanished == 1
