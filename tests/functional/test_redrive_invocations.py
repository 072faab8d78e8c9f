"""A workflow failure net's DLQ (an asynchronous invocation's on-failure destination) is listed and redriven.

An Express workflow's failure net is invoked by its execution log's subscription, asynchronously: what
still fails after Lambda's retries lands in its DLQ as AWS's invocation record, the request inside
(``requestPayload``). ``inferbus redrive`` invokes the function that record names again with that
request, so the execution's end is still reported: its failure event on the bus, the record kept with
the reason. The workflows come from the declarations.
"""

from __future__ import annotations

import json

import pytest
from inferbus_lambda.contracts import from_eventbridge_event

from inferbus.cli import main
from inferbus.local import LocalPipeline
from inferbus.model.names import DEAD_LETTER_QUEUE_URL, FUNCTION_NAME, pascal
from inferbus.runtime.queue_ops import peek_messages
from inferbus.runtime.provision import register_stack
from tests.declared import PIPELINE
from tests.unit.test_execution_failure_reports import logged

EXPRESS = [workflow for workflow in PIPELINE.workflows if workflow.express]


def on_failure_record(function_arn: str, request: dict) -> dict:
    """What Lambda sends an asynchronous invocation's on-failure destination after its retries."""
    return {"version": "1.0", "timestamp": "2026-12-07T10:00:00.000Z",
            "requestContext": {"requestId": "0d5e5f5c-0000-4000-8000-000000000009", "functionArn": f"{function_arn}:$LATEST",
                               "condition": "RetriesExhausted", "approximateInvokeCount": 3},
            "requestPayload": request,
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
            "responsePayload": {"errorMessage": "the bus refused it", "errorType": "PublishError"}}


@pytest.fixture(scope="module")
def pipeline(template):
    with LocalPipeline(template) as started:
        register_stack(started.session, started.stack_name, started.outputs)  # describe-stacks, for --list
        yield started


@pytest.mark.skipif(not EXPRESS, reason="no Express workflow is declared (a Standard one's net is a queue consumer)")
@pytest.mark.parametrize("workflow", EXPRESS, ids=[w.name for w in EXPRESS])
def test_a_failure_net_s_on_failure_record_is_invoked_again_and_the_end_is_reported(pipeline, workflow, capsys):
    net = f"{pascal(workflow.name)}ExecutionFailures"
    dlq_url = pipeline.outputs[f"{net}{DEAD_LETTER_QUEUE_URL}"]
    function = pipeline.function(pipeline.outputs[f"{net}{FUNCTION_NAME}"])
    execution = f"arn:aws:states:us-east-1:123456789012:express:{workflow.name}:redrive-{workflow.name}:0d5c"
    request = logged({"type": "ExecutionFailed", "execution_arn": execution, "event_timestamp": "1796464800000",
                                    "details": {"error": "States.Runtime", "cause": "lost on the way"}})
    pipeline.sqs.send_message(QueueUrl=dlq_url, MessageBody=json.dumps(on_failure_record(function.spec.arn, request)))
    pipeline.tapped_events()

    assert main(["redrive", dlq_url, "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    (letter,) = dry["messages"]
    assert "invokes its function again" in letter["verdict"] and letter["last_reason"].startswith("RetriesExhausted")
    assert dry["would_move"] == 1 and len(peek_messages(pipeline.sqs, dlq_url)) == 1  # a dry run moves nothing

    assert main(["redrive", dlq_url]) == 0
    assert "moved 1 of 1" in capsys.readouterr().out
    pipeline.drain()
    assert peek_messages(pipeline.sqs, dlq_url) == []
    (reported,) = [from_eventbridge_event(e) for e in pipeline.tapped_events() if e["detail-type"] == workflow.failure]
    assert (reported.data.execution, reported.data.error) == (execution, "States.Runtime")
    assert any(execution in message["body"] for message in pipeline.invalid_events())


def test_the_list_holds_the_kit_s_own_failure_queues_beside_the_consumers(pipeline, capsys):
    """Every ``...DeadLetterQueueUrl`` output: the declared consumers', then the unrouted check's and the nets'."""
    assert main(["redrive", "--list", "--json"]) == 0
    listed = {queue["dead_letter_queue"]: queue for queue in json.loads(capsys.readouterr().out)}
    assert set(listed) == {url for key, url in pipeline.outputs.items() if key.endswith(DEAD_LETTER_QUEUE_URL)}
    for workflow in EXPRESS:  # no queue dead-letters into an on-failure destination: its records name the function
        queue = listed[pipeline.outputs[f"{pascal(workflow.name)}ExecutionFailures{DEAD_LETTER_QUEUE_URL}"]]
        assert queue["consumer"] == f"{workflow.name}-execution-failures"
        assert queue["goes_back_to"].startswith("the function each record names")
