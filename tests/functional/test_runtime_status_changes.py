"""The embedded runtime tells how executions end as AWS does: a Standard one's status change on the
default bus (AWS sends none for Express), and names an execution started without a name."""

from __future__ import annotations

import json

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
