"""``inferbus invoke``: one function of the template, one event, its result on stdout and its logs on stderr."""

from __future__ import annotations

import json

import pytest
from inferbus_lambda.contracts import to_put_events_entry

from inferbus.cli import main
from inferbus.demo.inputs import sample_event
from tests.declared import DEMO, ON_QUEUES, PIPELINE

CONSUMERS = [consumer for consumer in PIPELINE.consumers if consumer.name in DEMO]
QUEUE_FED = [consumer for consumer in CONSUMERS if consumer in ON_QUEUES]


def sqs_batch(event) -> dict:
    """One record of an SQS event source mapping, holding ``event`` as the bus's rule delivered it."""
    entry = to_put_events_entry(event, "inferbus")
    delivered = {"version": "0", "id": "0d5e5f5c-0000-4000-8000-000000000001", "detail-type": entry["DetailType"],
                 "source": entry["Source"], "account": "123456789012", "time": "2026-12-05T10:00:00Z",
                 "region": "us-east-1", "resources": [], "detail": json.loads(entry["Detail"])}
    return {"Records": [{"messageId": "m-1", "receiptHandle": "r-1", "body": json.dumps(delivered),
                         "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1796464800000",
                                        "SenderId": "AIDA", "ApproximateFirstReceiveTimestamp": "1796464800000"},
                         "messageAttributes": {}, "md5OfBody": "", "eventSource": "aws:sqs",
                         "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:queue", "awsRegion": "us-east-1"}]}


@pytest.fixture(scope="module")
def template_file(template, tmp_path_factory):
    path = tmp_path_factory.mktemp("invoke") / "template.json"
    path.write_text(json.dumps(template))
    return str(path)


@pytest.mark.parametrize("consumer", CONSUMERS, ids=[c.name for c in CONSUMERS])
def test_a_consumer_takes_a_batch_of_one_held_out_sample(consumer, template_file, tmp_path, capsys):
    event_file = tmp_path / "batch.json"
    event_file.write_text(json.dumps(sqs_batch(sample_event(consumer, 0)[0])))
    assert main(["invoke", consumer.name, "--event", str(event_file), "--template", template_file]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"batchItemFailures": []}
    assert published_counts(err) == [[1.0]], err  # its EMF metrics say it published the one result
    assert err.splitlines()[-1].startswith("REPORT ")


def published_counts(err: str) -> list[list[float]]:
    """What the function's EMF metric lines on stderr say it published, invocation by invocation."""
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    return [line["RecordsPublished"] for line in lines if "RecordsPublished" in line]


@pytest.mark.parametrize("consumer", QUEUE_FED, ids=[c.name for c in QUEUE_FED])
def test_a_queue_s_consumer_given_one_cloudevent_gets_it_through_its_queue_as_a_batch_of_one(
        consumer, template_file, tmp_path, capsys):
    event_file = tmp_path / "event.json"
    event_file.write_text(sample_event(consumer, 0)[0].model_dump_json(exclude_none=True))
    assert main(["invoke", consumer.name, "--event", str(event_file), "--template", template_file]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"batchItemFailures": []}
    assert published_counts(err) == [[1.0]], err
    (note,) = [line for line in err.splitlines() if line.startswith("inferbus invoke: note:")]
    assert "a CloudEvent, not an SQS batch: sent to " in note and "batch of one record" in note


@pytest.mark.skipif(not QUEUE_FED, reason="no consumer fed by a queue is declared")
def test_an_eventbridge_event_as_a_rule_delivers_it_goes_through_the_queue_too(template_file, capsys):
    consumer = QUEUE_FED[0]
    delivered = json.loads(json.dumps(sqs_batch(sample_event(consumer, 1)[0])["Records"][0]["body"]))
    assert main(["invoke", consumer.name, "--event", delivered, "--template", template_file]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"batchItemFailures": []} and published_counts(err) == [[1.0]]
    assert "is an EventBridge event, not an SQS batch" in err


def test_a_handler_error_is_answered_as_the_invoke_api_does(template_file, capsys):
    consumer = CONSUMERS[0]
    assert main(["invoke", consumer.name, "--event", '{"Records": "not a list"}', "--template", template_file]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert set(answer) == {"errorType", "errorMessage", "stackTrace"} and answer["errorType"]


def test_a_workflow_is_named_by_its_steps(template_file, capsys):
    workflow = PIPELINE.workflows[0]
    assert main(["invoke", workflow.name, "--event", "{}", "--template", template_file]) == 2
    line = capsys.readouterr().err.strip()
    assert f"workflow {workflow.name} runs a function per step; name one: {workflow.name}." in line
    assert "\n" not in line


def test_an_unknown_function_lists_what_there_is(template_file, capsys):
    assert main(["invoke", "no-such-function", "--event", "{}", "--template", template_file]) == 2
    line = capsys.readouterr().err.strip()
    assert "no function 'no-such-function'" in line and all(c.name in line for c in PIPELINE.consumers)


@pytest.mark.parametrize("workflow", PIPELINE.workflows, ids=[w.name for w in PIPELINE.workflows])
def test_a_workflow_s_accept_step_answers_the_request_its_asl_writes(workflow, template_file, tmp_path, capsys):
    """The Accept step every workflow starts with, given what its state sends: an input that is no event is
    rejected with a reason (the workflow then emits its failure event), not crashed on."""
    request = {"event": {"detail": {"not": "an event"}}, "workflow": workflow.name, "types": [workflow.accepts.type],
               "emits": [workflow.emits] if isinstance(workflow.emits, str) else list(workflow.emits),
               "result_source": workflow.result_source, "execution": "local:1"}
    (tmp_path / "request.json").write_text(json.dumps(request))
    code = main(["invoke", f"{workflow.name}.Accept", "--event", str(tmp_path / "request.json"),
                 "--template", template_file])
    out, err = capsys.readouterr()
    answer = json.loads(out)
    assert code == 0 and answer["status"] == "rejected" and answer["reason"], answer
    assert "REPORT " in err
