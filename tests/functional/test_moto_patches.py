"""The one module that changes moto (inferbus/runtime/moto_patches.py), pinned to moto 5.2.5.

These fail when moto changes under it: its version, or the signature of anything patched or read.
"""

from __future__ import annotations

import inspect
import json
import threading

import boto3
import moto
import pytest
from moto.core import responses as moto_responses
from moto.core.responses import BaseResponse
from moto.dynamodb.models import DynamoDBBackend
from moto.events.models import EventPattern, EventsBackend, Rule
from moto.events.responses import EventsHandler
from moto.sqs.models import Queue, SQSBackend
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.asl.utils import json_path
from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication, Execution

from inferbus.runtime import moto_patches
from tests.runtime_fixtures import runtime
from tests.runtime_fixtures import templates as t

PATCHED = [  # (owner, name, parameters): what install() replaces
    (BaseResponse, "call_action", ["self"]),
    (SQSBackend, "is_message_valid_based_on_retention_period", ["self", "queue_name", "message"]),
    (Queue, "add_message", ["self", "message"]),
    (SQSBackend, "change_message_visibility", ["self", "queue_name", "receipt_handle", "visibility_timeout"]),
    (EventsBackend, "put_events", ["self", "events"]),
    (EventPattern, "load", ["raw_pattern"]),
    (EventPattern, "matches_event", ["self", "event"]),
    (Rule, "send_to_targets", ["self", "original_event", "transform_input"]),
    (EventsHandler, "test_event_pattern", ["self"]),
    (BaseExecutionWorkerCommunication, "terminated", ["self"]),
    (lambda_eval_utils, "boto_client_for", ["region", "service", "state_credentials"]),
    (moto_responses, "method_names_from_class", ["clazz"]),
    (AmazonStateLanguageParser, "parse", ["definition"]),
    (json_path, "parse", ["path", "debug"]),
    (DynamoDBBackend, "transact_write_items", ["self", "transact_items"]),
]


def test_moto_is_the_version_the_patches_were_written_for():
    assert moto.__version__ == moto_patches.MOTO_VERSION == "5.2.5"


@pytest.mark.parametrize(("owner", "name", "parameters"), PATCHED, ids=[f"{getattr(o, '__name__', o)}.{n}" for o, n, _ in PATCHED])
def test_what_is_patched_still_has_the_signature_it_had(owner, name, parameters):
    assert not moto_patches.installed()
    assert list(inspect.signature(getattr(owner, name)).parameters) == parameters


def test_what_is_read_directly_is_still_there():
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    assert {"message_retention_period", "queue_arn", "_messages"} <= set(vars(Queue("q", "123456789012", "us-east-1")))
    assert "executions" in inspect.getsource(stepfunctions_parser_backends["123456789012"]["us-east-1"]._get_executions)
    assert all(f"self.{name} =" in inspect.getsource(Execution.__init__) for name in ("exec_worker", "exec_status", "exec_arn"))
    assert "get_event_history" in inspect.getsource(Execution.to_history_output)
    assert "_raw_pattern" in inspect.getsource(EventPattern.__init__)
    from moto.dynamodb import models as dynamodb_models

    # the transaction backs a table up with copy.deepcopy of the module's own `copy`
    assert dynamodb_models.copy.__name__ == "copy" and "copy.deepcopy" in inspect.getsource(DynamoDBBackend.transact_write_items)


def test_install_then_uninstall_restores_every_original():
    originals = [getattr(owner, name) for owner, name, _ in PATCHED]
    moto_patches.install()
    try:
        assert all(getattr(owner, name) is not original for (owner, name, _), original in zip(PATCHED, originals))
        with pytest.raises(RuntimeError, match="already patched"):
            moto_patches.install()
    finally:
        moto_patches.uninstall()
    assert [getattr(owner, name) for owner, name, _ in PATCHED] == originals


WATCHED = t.template(WorkQueue=t.queue(), WorkRule=t.rule("Work", [t.queue_target("WorkQueue")]))


def test_delivered_events_keep_their_account_and_disabled_rules_deliver_nothing():
    with runtime(WATCHED, tap=False) as pipeline:
        url = pipeline.deployment.queues["WorkQueue"].url
        entry = {"EventBusName": pipeline.bus_name, "Source": "s", "DetailType": "Work", "Detail": "{}"}
        pipeline.put_events([entry])
        (message,) = pipeline.sqs.receive_message(QueueUrl=url)["Messages"]
        delivered = json.loads(message["Body"])
        assert delivered["account"] == "123456789012" and delivered["time"].endswith("Z")
        assert "ingestion-time" not in delivered
        pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        (rule,) = pipeline.deployment.rules.values()
        pipeline.events.disable_rule(Name=rule, EventBusName=pipeline.bus_name)
        pipeline.put_events([entry])
        assert pipeline.sqs.receive_message(QueueUrl=url).get("Messages", []) == []


def test_a_detail_that_is_json_but_not_an_object_is_malformed_as_aws_answers():
    with runtime(WATCHED, tap=False) as pipeline:
        entry = {"EventBusName": pipeline.bus_name, "Source": "s", "DetailType": "Work", "Detail": "{}"}
        details = ["[]", "42", '"text"', "null", "{}", "{not json"]
        answer = pipeline.events.put_events(Entries=[entry | {"Detail": detail} for detail in details])
        codes = [result.get("ErrorCode") for result in answer["Entries"]]
        assert codes == ["MalformedDetail"] * 4 + [None, "MalformedDetail"] and answer["FailedEntryCount"] == 5
        url = pipeline.deployment.queues["WorkQueue"].url
        (message,) = pipeline.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        assert json.loads(message["Body"])["detail"] == {}  # only the object was delivered


def test_test_event_pattern_answers_and_an_invalid_pattern_is_refused():
    with runtime(WATCHED, tap=False) as pipeline:
        event = {"id": "1", "account": "123456789012", "source": "s", "time": "2026-01-01T00:00:00Z",
                 "region": "us-east-1", "resources": [], "detail-type": "Work", "detail": {"analysis": []}}
        pattern = {"detail": {"analysis": [{"exists": False}]}}
        answer = pipeline.events.test_event_pattern(EventPattern=json.dumps(pattern), Event=json.dumps(event))
        assert answer["Result"] is True
        with pytest.raises(pipeline.events.exceptions.InvalidEventPatternException, match="empty arrays"):
            pipeline.events.put_rule(Name="bad", EventBusName=pipeline.bus_name, EventPattern=json.dumps({"a": []}))


def test_conditional_writes_from_many_threads_are_atomic():
    """Each request is processed whole before the next: of 8 threads claiming one key, exactly one wins."""
    with runtime(t.template(Claims={"Type": "AWS::DynamoDB::Table", "Properties": {
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}]}}), tap=False) as pipeline:
        table = pipeline.deployment.tables["Claims"]
        wins = []
        for round_ in range(20):
            barrier = threading.Barrier(8)

            def claim(key=f"k{round_}"):
                client = boto3.client("dynamodb")
                barrier.wait()
                try:
                    client.put_item(TableName=table, Item={"id": {"S": key}}, ConditionExpression="attribute_not_exists(id)")
                    wins.append(key)
                except client.exceptions.ConditionalCheckFailedException:
                    pass

            threads = [threading.Thread(target=claim) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        assert sorted(wins) == sorted(f"k{i}" for i in range(20))
