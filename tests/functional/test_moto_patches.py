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
from moto import backends as moto_backends
from moto.core import responses as moto_responses
from moto.core.common_models import BaseModel
from moto.core.responses import BaseResponse
from moto.core.serialize import AttributePicker, XFormedAttributePicker
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords
from moto.events.models import EventPattern, EventsBackend, Replay, Rule
from moto.events.responses import EventsHandler
from moto.sqs import models as sqs_models
from moto.sqs.models import Queue, SQSBackend
from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import TimeoutSeconds
from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState
from moto.stepfunctions.parser.asl.component.state.state import CommonStateField
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import StateTaskService
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.asl.component.common.path import result_path
from moto.stepfunctions.parser.asl.utils import json_path
from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication, Execution
from moto.stepfunctions.parser.models import StepFunctionsParserBackend

from inferbus.runtime import moto_patches
from tests.runtime_fixtures import runtime
from tests.runtime_fixtures import templates as t

PATCHED = [  # (owner, name, parameters): what install() replaces
    (BaseResponse, "call_action", ["self"]),
    (BaseResponse, "_dispatch", ["self", "request", "full_url", "headers"]),
    (SQSBackend, "is_message_valid_based_on_retention_period", ["self", "queue_name", "message"]),
    (sqs_models, "generate_receipt_handle", []),
    (Queue, "add_message", ["self", "message"]),
    (SQSBackend, "change_message_visibility", ["self", "queue_name", "receipt_handle", "visibility_timeout"]),
    (Queue, "delete_message", ["self", "receipt_handle"]),
    (SQSBackend, "receive_message", ["self", "queue_name", "count", "wait_seconds_timeout", "visibility_timeout",
                                     "message_attribute_names"]),
    (SQSBackend, "purge_queue", ["self", "queue_name"]),
    (EventsHandler, "put_events", ["self"]),
    (EventsBackend, "put_events", ["self", "events"]),
    (EventPattern, "load", ["raw_pattern"]),
    (EventPattern, "matches_event", ["self", "event"]),
    (Rule, "send_to_targets", ["self", "original_event", "transform_input"]),
    (EventsHandler, "test_event_pattern", ["self"]),
    (Replay, "replay_events", ["self", "archive"]),
    (BaseExecutionWorkerCommunication, "terminated", ["self"]),
    (StateTaskService, "_eval_execution", ["self", "env"]),
    (ExecutionState, "_evaluate_with_timeout", ["self", "env"]),

    (StepFunctionsParserBackend, "start_execution", ["self", "state_machine_arn", "name", "execution_input", "trace_header"]),
    (lambda_eval_utils, "boto_client_for", ["region", "service", "state_credentials"]),
    (moto_responses, "method_names_from_class", ["clazz"]),
    (moto_backends, "list_of_moto_modules", []),
    (AmazonStateLanguageParser, "parse", ["definition"]),
    (json_path, "parse", ["path", "debug"]),
    (result_path, "parse", ["string"]),
    (DynamoDBBackend, "transact_write_items", ["self", "transact_items"]),
    (ConditionExpressionParser, "_lex_condition_expression", ["self"]),
    (CommonStateField, "_get_state_entered_event_details", ["self", "env"]),
    (CommonStateField, "_get_state_exited_event_details", ["self", "env"]),
    (BaseModel, "__new__", ["cls", "args", "kwargs"]),
    (AttributePicker, "get_possible_keys", ["self", "context"]),
    (XFormedAttributePicker, "get_possible_keys", ["self", "context"]),
]


def test_moto_is_the_version_the_patches_were_written_for():
    assert moto.__version__ == moto_patches.MOTO_VERSION == "5.2.5"


@pytest.mark.parametrize(("owner", "name", "parameters"), PATCHED, ids=[f"{getattr(o, '__name__', o)}.{n}" for o, n, _ in PATCHED])
def test_what_is_patched_still_has_the_signature_it_had(owner, name, parameters):
    assert not moto_patches.installed()
    assert list(inspect.signature(getattr(owner, name)).parameters) == parameters


def test_what_is_read_directly_is_still_there():
    from moto.sqs.models import Message

    # replaced too: two properties (computed as moto computes them), and Message's (inherited) __new__
    assert all(isinstance(Queue.__dict__[name], property) for name in ("attributes", "messages"))
    assert "__new__" not in Message.__dict__ and "instances_tracked" in inspect.getsource(Message.__new__)
    assert {"BASE_ATTRIBUTES", "FIFO_ATTRIBUTES", "KMS_ATTRIBUTES"} <= set(vars(Queue))
    assert "self.deleted_messages" in inspect.getsource(Queue.delete_message)
    # what a scan for receivable messages compares, with the clock read once (Message.visible and .delayed each read it)
    assert "current_time > self.visible_at" in inspect.getsource(Message.visible.fget)
    assert "current_time < self.delayed_until" in inspect.getsource(Message.delayed.fget)
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    assert {"message_retention_period", "queue_arn", "_messages"} <= set(vars(Queue("q", "123456789012", "us-east-1")))
    assert "executions" in inspect.getsource(stepfunctions_parser_backends["123456789012"]["us-east-1"]._get_executions)
    assert all(f"self.{name} =" in inspect.getsource(Execution.__init__) for name in ("exec_worker", "exec_status", "exec_arn"))
    assert "get_event_history" in inspect.getsource(Execution.to_history_output)
    assert "_raw_pattern" in inspect.getsource(EventPattern.__init__)
    from moto.stepfunctions.parser import utils as parser_utils

    assert isinstance(parser_utils.TMP_THREADS, list)  # pruned by forget_finished_executions
    from moto.dynamodb import models as dynamodb_models

    # what the PutEvents patch reads: a bus by name, its policy as PutPermission stored it, an STS session's role
    from moto.events.models import EventBus
    from moto.sts.models import AssumedRole, STSBackend

    assert callable(EventsBackend._normalize_event_bus_arn) and isinstance(EventBus.__dict__["policy"], property)
    assert callable(STSBackend.get_assumed_role_from_access_key) and "role_arn" in inspect.signature(AssumedRole).parameters
    from moto.stepfunctions.parser.asl.eval.states import ExecutionData

    assert "RoleArn" in ExecutionData.__annotations__  # a task's execution's role, read from its context object
    # the transaction backs a table up with copy.deepcopy of the module's own `copy`
    assert dynamodb_models.copy.__name__ == "copy" and "copy.deepcopy" in inspect.getsource(DynamoDBBackend.transact_write_items)
    # DynamoDB's reserved words: read only by membership tests (replaced by a set)
    from moto.dynamodb import comparisons, responses as dynamodb_responses
    from moto.dynamodb.parsing import validators

    assert "KEYWORDS" in vars(ReservedKeywords) and len(ReservedKeywords._get_reserved_keywords()) == 573
    for module in (comparisons, dynamodb_responses, validators):
        assert inspect.getsource(module).count("ReservedKeywords.get_reserved_keywords()") == \
            inspect.getsource(module).count("in ReservedKeywords.get_reserved_keywords()") >= 1
    # an archive's rule target, as moto makes it (its input template names the archive) and archives through it
    assert '"InputTemplate": f\'{{"archive-arn": "{archive.arn}:{archive.uuid}", "event": <aws.events.event.json>, ' \
        in inspect.getsource(EventsBackend.create_archive)
    assert list(inspect.signature(Rule._send_to_events_archive).parameters) == ["self", "resource_id", "event"]
    # what the PutEvents patch builds once per entry, as moto built it per rule (its keys, in its order)
    put_events_source = inspect.getsource(EventsBackend.put_events)
    assert "copy.deepcopy(_BASE_EVENT_MESSAGE)" in put_events_source and "rule.send_to_targets(event_msg)" in put_events_source
    assert 'event_msg["ingestion-time"] = unix_time()' in put_events_source
    # a state without a timeout of its own runs on the execution's thread; moto's own waits the default on a thread
    assert TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS == 99999999
    assert "terminated_event.wait(timeout_seconds)" in inspect.getsource(ExecutionState._evaluate_with_timeout)
    # a state's history events write out its input as get_input() returns it: a deep copy of the states' input
    from moto.stepfunctions.parser.asl.eval.states import States

    for method in (CommonStateField._get_state_entered_event_details, CommonStateField._get_state_exited_event_details):
        assert 'to_json_str(env.states.get_input(), separators=(",", ":"))' in inspect.getsource(method)
    assert "self._extract(query, self._states_data[\"input\"])" in inspect.getsource(States.get_input)
    assert "copy.deepcopy(result)" in inspect.getsource(States._extract)
    assert "env.variable_store.reset_tracing()" in inspect.getsource(CommonStateField._get_state_exited_event_details)
    # a received message is copied only so that its copy gets a new dict of the attributes asked for
    import copy

    from moto.sqs.models import _filter_message_attributes

    assert sqs_models.deepcopy is copy.deepcopy and "message_copy = deepcopy(message)" in inspect.getsource(SQSBackend.receive_message)
    assert "message.message_attributes = filtered_message_attributes" in inspect.getsource(_filter_message_attributes)
    # moto's clock, read by name in the modules that imported it
    from moto.core import utils as moto_utils
    from moto.events import models as events_models

    assert sqs_models.unix_time is moto_utils.unix_time is events_models.unix_time
    assert "unix_time(dt) * 1000.0" in inspect.getsource(moto_utils.unix_time_millis)


def test_install_then_uninstall_restores_every_original():
    from moto.sqs.models import Message

    replaced = [(owner, name) for owner, name, _ in PATCHED] + [(Queue, "attributes"), (Queue, "messages"),
                                                                (ReservedKeywords, "KEYWORDS")]
    originals = [owner.__dict__.get(name, getattr(owner, name)) for owner, name in replaced]
    moto_patches.install()
    try:
        assert all(owner.__dict__[name] is not original for (owner, name), original in zip(replaced, originals))
        assert "__new__" in Message.__dict__
        with pytest.raises(RuntimeError, match="already patched"):
            moto_patches.install()
    finally:
        moto_patches.uninstall()
    assert [owner.__dict__.get(name, getattr(owner, name)) for owner, name in replaced] == originals
    assert "__new__" not in Message.__dict__


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


FANNED = t.template(FirstQueue=t.queue(), SecondQueue=t.queue(), OtherQueue=t.queue(),
                    FirstRule=t.rule("Work", [t.queue_target("FirstQueue")]),
                    SecondRule=t.rule("Work", [t.queue_target("SecondQueue")]),
                    OtherRule=t.rule("Other", [t.queue_target("OtherQueue")]))


def test_an_event_is_built_once_and_each_rule_it_matches_gets_a_copy_of_its_own():
    with runtime(FANNED, tap=False) as pipeline:
        entry = {"EventBusName": pipeline.bus_name, "Source": "s", "DetailType": "Work", "Detail": '{"n": [1, 2]}',
                 "Resources": ["arn:aws:s3:::r"]}
        (answer,) = pipeline.events.put_events(Entries=[entry])["Entries"]
        bodies = {}
        for queue in ("FirstQueue", "SecondQueue", "OtherQueue"):
            url = pipeline.deployment.queues[queue].url
            bodies[queue] = [json.loads(m["Body"]) for m in pipeline.sqs.receive_message(QueueUrl=url).get("Messages", [])]
        arns = {logical: pipeline.events.describe_rule(Name=name, EventBusName=pipeline.bus_name)["Arn"]
                for logical, name in pipeline.deployment.rules.items()}
        matched = {logical: moto_patches.matched_events(arn) for logical, arn in arns.items()}
    (first,), (second,) = bodies["FirstQueue"], bodies["SecondQueue"]
    assert first == second and bodies["OtherQueue"] == []
    assert list(first) == ["version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"]
    assert first["id"] == answer["EventId"] and first["detail"] == {"n": [1, 2]} and first["resources"] == ["arn:aws:s3:::r"]
    assert matched == {"FirstRule": 1, "SecondRule": 1, "OtherRule": 0}


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


# -- SQS at any depth ---------------------------------------------------------------------------

def test_a_replay_takes_its_window_and_only_the_rules_it_names():
    """StartReplay: the archived events whose time is in the window, to Destination.FilterArns only."""
    import datetime

    from moto import mock_aws

    with mock_aws():
        moto_patches.install()
        try:
            events, sqs = (boto3.client(name, region_name="us-east-1") for name in ("events", "sqs"))
            bus_arn = events.create_event_bus(Name="bus")["EventBusArn"]
            archive_arn = events.create_archive(ArchiveName="all", EventSourceArn=bus_arn)["ArchiveArn"]
            rules, urls = {}, {}
            for name in ("taken", "other"):
                urls[name] = sqs.create_queue(QueueName=name)["QueueUrl"]
                queue_arn = sqs.get_queue_attributes(QueueUrl=urls[name], AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
                rules[name] = events.put_rule(Name=name, EventBusName="bus", EventPattern='{"source": ["s"]}')["RuleArn"]
                events.put_targets(Rule=name, EventBusName="bus", Targets=[{"Id": "q", "Arn": queue_arn}])
            now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
            times = {"old": now - datetime.timedelta(hours=2), "recent": now - datetime.timedelta(minutes=5)}
            events.put_events(Entries=[{"EventBusName": "bus", "Source": "s", "DetailType": "T", "Time": moment,
                                        "Detail": json.dumps({"which": which})} for which, moment in times.items()])

            def drain(name: str) -> list[tuple[str, bool]]:
                got = []
                while messages := sqs.receive_message(QueueUrl=urls[name], MaxNumberOfMessages=10).get("Messages"):
                    for message in messages:
                        body = json.loads(message["Body"])
                        got.append((body["detail"]["which"], "replay-name" in body))
                        sqs.delete_message(QueueUrl=urls[name], ReceiptHandle=message["ReceiptHandle"])
                return sorted(got)

            assert drain("taken") == drain("other") == [("old", False), ("recent", False)]
            from moto.events.models import events_backends

            (archive,) = events_backends["123456789012"]["us-east-1"].archives.values()  # each event as it was put
            assert [(event["detail"], event["source"], "ingestion-time" in event) for event in archive.events] == \
                [({"which": "old"}, "s", True), ({"which": "recent"}, "s", True)]
            events.start_replay(ReplayName="r", EventSourceArn=archive_arn, EventStartTime=now - datetime.timedelta(hours=1),
                                EventEndTime=now, Destination={"Arn": bus_arn, "FilterArns": [rules["taken"]]})
            assert drain("taken") == [("recent", True)] and drain("other") == []
        finally:
            moto_patches.uninstall()


DEPTH = 1_000


@pytest.fixture
def patched_sqs():
    """A patched moto SQS (no pipeline) and its backend."""
    from moto import mock_aws
    from moto.sqs.models import sqs_backends

    with mock_aws():
        moto_patches.install()
        try:
            yield boto3.client("sqs", region_name="us-east-1"), sqs_backends["123456789012"]["us-east-1"]
        finally:
            moto_patches.uninstall()


@pytest.mark.parametrize("returned", ["timed out", "sent back"])
def test_a_fifo_group_whose_batch_is_visible_again_is_received_from_its_oldest_message(patched_sqs, returned):
    """moto released a visible-again message from the in-flight set only as its receive reached it, and skipped
    a message whose group still had one in flight: a batch back in the queue came out last message first."""
    import time

    sqs, _ = patched_sqs
    url = sqs.create_queue(QueueName="ordered.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    for n in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{n}", MessageGroupId="g", MessageDeduplicationId=f"m{n}")
    taken = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=1)["Messages"]
    assert [m["Body"] for m in taken] == ["m0", "m1", "m2"]
    if returned == "timed out":
        time.sleep(1.1)
    else:  # as a consumer's failed records are: visible again at once, all three in one request
        sqs.change_message_visibility_batch(QueueUrl=url, Entries=[
            {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0} for n, m in enumerate(taken)])
        time.sleep(0.01)
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in again] == ["m0", "m1", "m2"]


class Reads:
    """Counts, while active, how often moto tests a message's visibility or compares its receipt handles."""

    def __init__(self, monkeypatch):
        from moto.sqs.models import Message

        self.count = 0
        for name in ("visible", "delayed"):
            original = Message.__dict__[name]
            monkeypatch.setattr(Message, name, property(lambda message, get=original.fget: self._read(get, message)))
        had = Message.had_receipt_handle
        monkeypatch.setattr(Message, "had_receipt_handle", lambda message, handle: self._read(had, message, handle))

    def _read(self, function, *args):
        self.count += 1
        return function(*args)


def fill(sqs, name: str, count: int, **attributes) -> str:
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    for start in range(0, count, 10):
        sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{start + i}"} for i in range(10)])
    return url


def test_queue_attributes_are_moto_s_own_computed_one_at_a_time(patched_sqs):
    sqs, backend = patched_sqs
    dlq = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    redrive = json.dumps({"deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:dlq", "maxReceiveCount": "2"})
    url = fill(sqs, "deep", 30, RedrivePolicy=redrive, DelaySeconds="0")
    fifo = sqs.create_queue(QueueName="q.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60)
    for queue in (backend.get_queue("deep"), backend.get_queue("q.fifo"), backend.get_queue("dlq")):
        lazy = queue.attributes
        (_, _, moto_s), = [saved for saved in moto_patches.HOOKS._saved if saved[:2] == (Queue, "attributes")]
        assert dict(lazy) == moto_s.fget(queue)
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (attributes["ApproximateNumberOfMessages"], attributes["ApproximateNumberOfMessagesNotVisible"]) == ("20", "10")
    assert json.loads(attributes["RedrivePolicy"])["maxReceiveCount"] == 2
    assert dlq and fifo


def test_a_send_reads_no_message_of_a_deep_queue(patched_sqs, monkeypatch):
    sqs, _ = patched_sqs
    url = fill(sqs, "deep", DEPTH)
    reads = Reads(monkeypatch)
    sqs.send_message(QueueUrl=url, MessageBody="one more")
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "more"} for i in range(10)])
    assert reads.count == 0


def test_a_receive_and_its_deletes_read_what_they_return_not_the_queue(patched_sqs, monkeypatch):
    sqs, backend = patched_sqs
    url = fill(sqs, "deep", DEPTH)
    reads = Reads(monkeypatch)
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                                    for i, m in enumerate(received)])
    assert [m["Body"] for m in received] == [f"m{i}" for i in range(10)]  # in order, as moto gives them
    assert reads.count <= 3 * 10  # the clock tested on each message returned, not on the other 990
    assert len(backend.get_queue("deep")._messages) == DEPTH - 10
    # the next receive skips the messages in flight ahead of it, and nothing else
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60)["Messages"]
    reads.count = 0
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in received + again] == [f"m{i}" for i in range(10, 30)]
    assert reads.count <= 3 * 20


def test_a_receive_hands_out_the_attributes_asked_for_and_the_queue_keeps_them_all(patched_sqs):
    sqs, backend = patched_sqs
    url = sqs.create_queue(QueueName="attributes")["QueueUrl"]
    attributes = {name: {"DataType": "String", "StringValue": name * 2} for name in ("a", "b", "custom.c")}
    sqs.send_message(QueueUrl=url, MessageBody="m", MessageAttributes=attributes)
    (first,) = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["a", "custom.*"], VisibilityTimeout=0)["Messages"]
    assert set(first["MessageAttributes"]) == {"a", "custom.c"}
    (again,) = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"], AttributeNames=["All"])["Messages"]
    assert again["MessageAttributes"] == attributes and again["Attributes"]["ApproximateReceiveCount"] == "2"
    assert again["ReceiptHandle"] != first["ReceiptHandle"] and again["MD5OfBody"] == first["MD5OfBody"]
    (message,) = backend.get_queue("attributes")._messages
    assert set(message.message_attributes) == {"a", "b", "custom.c"}


@pytest.mark.parametrize("seed", range(2))
def test_the_clock_reads_as_moto_s_and_converts_a_given_time_as_moto_does(seed):
    import datetime
    import random

    from moto.core import utils as moto_utils
    from moto.events import models as events_models

    moto_s = moto_utils.unix_time
    generator = random.Random(seed)
    given = [datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=generator.randrange(-10**15, 4 * 10**15))
             for _ in range(20_000)] + [datetime.datetime(2026, 12, 7, 23, 59, 59, 999_999), datetime.datetime(1969, 12, 31)]
    assert [moto_patches.unix_time(dt) for dt in given] == [moto_s(dt) for dt in given]
    for _ in range(20_000):  # now: never before a read of moto's clock made before it, nor after one made after
        before, ours, after = moto_s(), moto_patches.unix_time(), moto_s()
        assert before <= ours <= after
    moto_patches.install()
    try:
        assert sqs_models.unix_time is events_models.unix_time is moto_utils.unix_time is moto_patches.unix_time
        assert moto_s() <= moto_utils.unix_time_millis() / 1000 <= moto_s()
    finally:
        moto_patches.uninstall()
    assert sqs_models.unix_time is events_models.unix_time is moto_utils.unix_time is moto_s


def test_deletes_answer_as_moto_does(patched_sqs):
    sqs, backend = patched_sqs
    dlq = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    redrive = json.dumps({"deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:dlq", "maxReceiveCount": "1"})
    url = fill(sqs, "work", 10, RedrivePolicy=redrive)
    (first,) = sqs.receive_message(QueueUrl=url)["Messages"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])  # again: accepted, as moto does
    with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):
        sqs.delete_message(QueueUrl=url, ReceiptHandle="not-a-handle")
    (second,) = sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)["Messages"]
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60)  # moves it to the DLQ
    with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):  # no longer on this queue
        sqs.delete_message(QueueUrl=url, ReceiptHandle=second["ReceiptHandle"])
    (moved,) = sqs.receive_message(QueueUrl=dlq)["Messages"]
    assert moved["Body"] == second["Body"]
    sqs.delete_message(QueueUrl=dlq, ReceiptHandle=moved["ReceiptHandle"])
    assert backend.get_queue("dlq")._messages == []
    purged = fill(sqs, "purged", 10)
    (third,) = sqs.receive_message(QueueUrl=purged)["Messages"]
    sqs.purge_queue(QueueUrl=purged)
    with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):
        sqs.delete_message(QueueUrl=purged, ReceiptHandle=third["ReceiptHandle"])


def test_receipt_handles_keep_moto_s_form_and_each_receive_gets_a_new_one(patched_sqs):
    from moto.sqs.utils import generate_receipt_handle

    sqs, _ = patched_sqs
    url = fill(sqs, "work", 10)
    first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)["Messages"]
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    handles = [m["ReceiptHandle"] for m in first + again]
    moto_s = generate_receipt_handle()
    assert len(set(handles)) == 20
    assert all(len(h) == len(moto_s) and h.isascii() and h.isalpha() and h.islower() for h in handles)
    sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                                    for i, m in enumerate(again)])
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (attributes["ApproximateNumberOfMessages"],
            attributes["ApproximateNumberOfMessagesNotVisible"]) == ("0", "0")


def test_messages_are_not_kept_after_they_are_deleted(patched_sqs):
    from moto.sqs.models import Message

    sqs, backend = patched_sqs
    before = len(Message.instances_tracked)
    url = fill(sqs, "work", 20)
    sent = list(backend.get_queue("work")._messages)
    for _ in range(2):
        received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                                        for i, m in enumerate(received)])
    assert len(Message.instances_tracked) == before
    assert not any(message in moto_patches.OWNERS for message in sent)
    assert moto_patches._index(backend.get_queue("work")) == moto_patches.MessageIndex()


@pytest.fixture
def patched_dynamodb():
    """A DynamoDB table (hash key ``id``) in moto with the patches on, holding 300 items ``item-0``..."""
    from moto import mock_aws

    with mock_aws():
        moto_patches.install()
        try:
            client = boto3.client("dynamodb", region_name="us-east-1")
            client.create_table(TableName="t", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                                AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                                BillingMode="PAY_PER_REQUEST")
            for n in range(300):
                client.put_item(TableName="t", Item={"id": {"S": f"item-{n}"}, "n": {"N": str(n)}})
            yield client
        finally:
            moto_patches.uninstall()


def test_a_condition_expression_lexed_once_is_evaluated_with_each_request_s_own_values(patched_dynamodb):
    client = patched_dynamodb
    condition = "attribute_not_exists(id) OR (#n < :limit AND #n >= :floor)"
    for limit, written in ((5, False), (50, True), (5, False)):  # item-7 holds n = 7, then 8
        put = dict(TableName="t", Item={"id": {"S": "item-7"}, "n": {"N": "8"}}, ConditionExpression=condition,
                   ExpressionAttributeNames={"#n": "n"},
                   ExpressionAttributeValues={":limit": {"N": str(limit)}, ":floor": {"N": "0"}})
        if written:
            client.put_item(**put)
        else:
            with pytest.raises(client.exceptions.ConditionalCheckFailedException):
                client.put_item(**put)
    assert table_items(client)["item-7"]["n"] == {"N": "8"}
    for _ in range(2):  # refused as moto refuses them, each time: a reserved word, a text that does not lex
        with pytest.raises(client.exceptions.ClientError, match="reserved keyword"):
            client.put_item(TableName="t", Item={"id": {"S": "x"}}, ConditionExpression="attribute_not_exists(name)")
        with pytest.raises(ValueError, match="Cannot parse condition"):
            client.put_item(TableName="t", Item={"id": {"S": "x"}}, ConditionExpression="id = $")


def table_items(client) -> dict[str, dict]:
    pages = client.get_paginator("scan").paginate(TableName="t")
    return {item["id"]["S"]: item for page in pages for item in page["Items"]}


def test_a_cancelled_transaction_leaves_every_item_as_it_was(patched_dynamodb):
    client, before = patched_dynamodb, table_items(patched_dynamodb)
    writes = [  # each kind of write, on an item that exists and on one that does not; the last check fails
        {"Put": {"TableName": "t", "Item": {"id": {"S": "item-1"}, "n": {"N": "-1"}}}},
        {"Put": {"TableName": "t", "Item": {"id": {"S": "new-1"}, "n": {"N": "1"}}}},
        {"Update": {"TableName": "t", "Key": {"id": {"S": "item-2"}}, "UpdateExpression": "SET n = :v, extra = :v",
                    "ExpressionAttributeValues": {":v": {"N": "7"}}}},
        {"Update": {"TableName": "t", "Key": {"id": {"S": "new-2"}}, "UpdateExpression": "SET n = :v",
                    "ExpressionAttributeValues": {":v": {"N": "7"}}}},
        {"Delete": {"TableName": "t", "Key": {"id": {"S": "item-3"}}}},
        {"ConditionCheck": {"TableName": "t", "Key": {"id": {"S": "item-4"}}, "ConditionExpression": "n = :no",
                            "ExpressionAttributeValues": {":no": {"N": "-5"}}}},
    ]
    with pytest.raises(client.exceptions.TransactionCanceledException):
        client.transact_write_items(TransactItems=writes)
    assert table_items(client) == before
    client.transact_write_items(TransactItems=writes[:-1])  # without the failing check, all of it lands
    after = table_items(client)
    assert after["item-1"]["n"] == {"N": "-1"} and after["item-2"]["extra"] == {"N": "7"} and "item-3" not in after
    assert {"new-1", "new-2"} <= set(after)


def test_a_transaction_that_names_the_same_item_twice_is_refused_and_undone(patched_dynamodb):
    client, before = patched_dynamodb, table_items(patched_dynamodb)
    twice = [{"Put": {"TableName": "t", "Item": {"id": {"S": "item-5"}, "n": {"N": "0"}}}},
             {"Delete": {"TableName": "t", "Key": {"id": {"S": "item-5"}}}}]
    with pytest.raises(client.exceptions.ClientError):
        client.transact_write_items(TransactItems=twice)
    assert table_items(client) == before


def test_a_transaction_copies_the_items_it_names_not_the_table(patched_dynamodb, monkeypatch):
    """moto backed up the whole table for each transaction: a claim's cost grew with every claim made before."""
    from moto.dynamodb.models.dynamo_type import Item

    copies = []
    deepcopy = Item.__deepcopy__
    monkeypatch.setattr(Item, "__deepcopy__", lambda self, memo: copies.append(self) or deepcopy(self, memo))
    patched_dynamodb.transact_write_items(TransactItems=[
        {"Put": {"TableName": "t", "Item": {"id": {"S": f"claim-{n}"}}, "ConditionExpression": "attribute_not_exists(id)"}}
        for n in range(2)])
    assert len(copies) <= 2  # the two (absent) items it names at most, whatever the table holds (300 items)


@pytest.fixture
def ttl_table(patched_dynamodb):
    """The 300-item table with TTL on ``expires`` (what the claims table declares for ``expiration``)."""
    patched_dynamodb.update_time_to_live(TableName="t", TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires"})
    return patched_dynamodb


def test_items_past_their_time_to_live_are_deleted_as_dynamodb_does(ttl_table):
    now = 2_000_000_000
    cases = {  # id -> its TTL attribute, or None for none; what AWS deletes: a Number of epoch s in the past
        "past": {"N": str(now - 1)},
        "past-fraction": {"N": f"{now - 0.5}"},
        "future": {"N": str(now + 60)},
        "now": {"N": str(now)},  # not yet past
        "string": {"S": str(now - 100)},  # not a Number: never expires
        "ancient": {"N": str(now - 6 * 365 * 86_400)},  # more than five years past: AWS ignores it
        "none": None,
    }
    for key, expires in cases.items():
        ttl_table.put_item(TableName="t", Item={"id": {"S": key}, **({"expires": expires} if expires else {})})
    assert moto_patches.expire_items(now) == 2
    left = set(table_items(ttl_table))
    assert {"past", "past-fraction"}.isdisjoint(left)
    assert {"future", "now", "string", "ancient", "none", "item-0", "item-299"} <= left
    assert moto_patches.expire_items(now + 61) == 2  # "future" and "now" in their turn
    assert moto_patches.expire_items(now + 61) == 0


def test_a_table_with_ttl_off_or_a_range_key_is_swept_by_its_own_setting(patched_dynamodb):
    client = patched_dynamodb
    client.put_item(TableName="t", Item={"id": {"S": "gone?"}, "expires": {"N": "1"}})
    assert moto_patches.expire_items(10) == 0  # TTL never enabled on "t": nothing is deleted
    client.create_table(TableName="ranged", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                      {"AttributeName": "sk", "KeyType": "RANGE"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                              {"AttributeName": "sk", "AttributeType": "N"}], BillingMode="PAY_PER_REQUEST")
    client.update_time_to_live(TableName="ranged", TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"})
    for sk in range(6):
        client.put_item(TableName="ranged", Item={"pk": {"S": "a"}, "sk": {"N": str(sk)}, "ttl": {"N": str(100 + sk)}})
    assert moto_patches.expire_items(103) == 3  # sk 0, 1, 2 (ttl 100-102), under one hash key
    assert sorted(int(i["sk"]["N"]) for i in client.scan(TableName="ranged")["Items"]) == [3, 4, 5]
    client.update_time_to_live(TableName="ranged", TimeToLiveSpecification={"Enabled": False, "AttributeName": "ttl"})
    assert moto_patches.expire_items(10**4) == 0 and client.scan(TableName="ranged")["Count"] == 3



def test_what_a_backend_lets_go_of_is_freed_and_what_it_holds_still_listed(patched_dynamodb):
    """moto's model classes listed every instance ever made (``instances_tracked``): each DynamoDB item
    written, each execution with its history, kept for the life of a server."""
    import gc

    from moto.dynamodb.models.dynamo_type import Item

    def alive() -> int:
        gc.collect()
        return sum(isinstance(o, Item) for o in gc.get_objects())

    before = alive()
    for n in range(200):  # each put makes a new Item; the table keeps the last one per key
        patched_dynamodb.put_item(TableName="t", Item={"id": {"S": "rewritten"}, "n": {"N": str(n)}})
    for n in range(100):
        patched_dynamodb.put_item(TableName="t", Item={"id": {"S": f"gone-{n}"}})
        patched_dynamodb.delete_item(TableName="t", Key={"id": {"S": f"gone-{n}"}})
    assert alive() - before <= 5  # the one "rewritten" item (and what a request holds for a moment)
    listed = list(Item.instances_tracked)
    assert any(item.attrs["id"].value == "rewritten" for item in listed)
    assert sum(item.attrs["id"].value == "item-7" for item in listed) == 1  # items the table holds stay listed


def test_the_interpreter_modules_whose_copies_are_replaced_still_copy_with_copy_deepcopy():
    import importlib

    for name in moto_patches.STATE_DATA_COPIERS:
        module = importlib.import_module(name)
        assert module.copy.__name__ == "copy" and "copy.deepcopy(" in inspect.getsource(module), name


@pytest.mark.parametrize("value", [
    {"embedding": [0.25 * i for i in range(384)], "meta": {"id": "e-1", "ok": True, "none": None, "n": 2**40}},
    [[1, [2, [3, {"deep": ["x"]}]]], "s", 1.5, False],
    "a string", 7, None,
    {"pixels": list(range(2304)), "width": 48},  # a long flat list: copied in one pass
    [0] * 40 + [{"nested": [1]}] + [[2, 3]],  # long, scalar first, containers last: copied item by item
])
def test_a_json_copy_equals_deepcopy_and_shares_no_container(value):
    import copy

    copied = moto_patches.copy_json(value)
    assert copied == copy.deepcopy(value)

    def containers(tree: object) -> list[object]:
        found: list[object] = []
        stack = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, (dict, list)):
                found.append(node)
                stack.extend(node.values() if isinstance(node, dict) else node)
        return found

    assert not {id(c) for c in containers(copied)} & {id(c) for c in containers(value)}


def test_what_is_not_plain_json_is_deep_copied_as_before():
    import collections
    import datetime

    class State:
        def __init__(self) -> None:
            self.data = {"k": [1]}

    state, ordered, stamp = State(), collections.OrderedDict(a=[1]), datetime.datetime(2026, 1, 1)
    copied = moto_patches.copy_json({"state": state, "ordered": ordered, "at": stamp})
    assert copied["state"] is not state and copied["state"].data == state.data and copied["state"].data is not state.data
    assert type(copied["ordered"]) is collections.OrderedDict and copied["ordered"]["a"] is not ordered["a"]
    assert copied["at"] == stamp


class _ResultPathEnv:
    """What a ResultPath reads of an environment: the state's input (moto's ``States``) and the stack."""

    def __init__(self, state_input: object, result: object) -> None:
        import copy

        self._states_data = {"input": state_input}
        self.states = self
        self.stack = [result]
        self._copy = copy.deepcopy

    def get_input(self) -> object:
        return self._copy(self._states_data["input"])


def _moto_result_path() -> object:
    saved = [original for owner, name, original in moto_patches.HOOKS._saved
             if owner is result_path.ResultPath and name == "_eval_body"]
    return saved[0] if saved else result_path.ResultPath._eval_body


@pytest.mark.parametrize(("path", "given", "result"), [
    ("$", {"a": 1}, {"b": [1, 2]}),
    ("$.added", {"a": 1}, "x"),
    ("$.a", {"a": {"old": True}}, {"new": [0.5] * 40}),  # replaced, not merged
    ("$.a.b.c", {"a": {"kept": 1}}, [1, {"d": 2}]),  # the missing objects on the way are made
    ("$.pixels.b", {"pixels": list(range(50))}, 1),  # a list on the way: jsonpath_ng leaves the input as it was
    ("$.text.b", {"text": "a string"}, 1),
    ("$.items[0]", {"items": [{"x": 1}]}, 2),  # an index: moto's evaluation
    ("$.a", [1, 2], 3),  # not an object
    ("$.a.b", {"a": None}, 3),
])
def test_a_result_path_of_fields_gives_moto_s_output(path, given, result):
    import copy

    def outcome(evaluate: object, env: _ResultPathEnv) -> object:
        try:
            evaluate(result_path.ResultPath(path), env)  # type: ignore[operator]
        except Exception as error:  # noqa: BLE001 - moto's own error for a path it cannot follow
            return type(error)
        return env.stack

    expected = outcome(_moto_result_path(), _ResultPathEnv(copy.deepcopy(given), copy.deepcopy(result)))
    env = _ResultPathEnv(copy.deepcopy(given), result)
    assert outcome(moto_patches.result_path_by_fields(_moto_result_path()), env) == expected
    if not isinstance(expected, list):
        return
    assert env._states_data["input"] == given  # the state's input is not written into
    output = json.dumps(env.stack[0])
    result_json = json.dumps(result)
    if isinstance(result, (dict, list)) and result_json in output:
        result[0 if isinstance(result, list) else next(iter(result))] = "changed"  # the output holds a copy
        assert json.dumps(env.stack[0]) == output


def test_only_a_path_of_single_fields_takes_the_direct_way():
    assert moto_patches.field_chain("$.tokens.words") == ("tokens", "words")
    assert moto_patches.field_chain("$") == ()
    for path in ("$.items[0]", "$.*", "$.a.*", "$..a", "$['a','b']", "$.a[*].b"):
        assert moto_patches.field_chain(path) is None, path


def test_an_execution_s_states_do_not_share_data_under_the_json_copy():
    """A Pass state that writes into its input's dict (ResultPath) leaves the execution's input as it was."""
    definition = {"StartAt": "Add", "States": {
        "Add": {"Type": "Pass", "Result": "x", "ResultPath": "$.nested.added", "Next": "Again"},
        "Again": {"Type": "Pass", "Result": "y", "ResultPath": "$.nested.again", "End": True}}}
    with runtime(t.template(), tap=False) as pipeline:
        arn = pipeline.stepfunctions.create_state_machine(
            name="copies", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/r")["stateMachineArn"]
        given = {"nested": {"kept": [1, 2]}}
        execution = pipeline.stepfunctions.start_execution(stateMachineArn=arn, input=json.dumps(given))["executionArn"]
        pipeline.drain()
        described = pipeline.stepfunctions.describe_execution(executionArn=execution)
    assert json.loads(described["input"]) == given
    assert json.loads(described["output"]) == {"nested": {"kept": [1, 2], "added": "x", "again": "y"}}


def test_a_state_s_history_events_carry_its_input_and_output_as_moto_writes_them():
    """Entered and exited events write the state's data as compact JSON (now from the data, not a copy of it),
    and an exited event carries the variables the state assigned."""
    definition = {"StartAt": "Add", "States": {
        "Add": {"Type": "Pass", "Result": "x", "ResultPath": "$.nested.added", "Assign": {"marker": "on"},
                "Next": "Again"},
        "Again": {"Type": "Pass", "Result": "é", "ResultPath": "$.nested.again", "End": True}}}
    given = {"nested": {"kept": [1, 2]}}
    after_add = {"nested": {"kept": [1, 2], "added": "x"}}
    after_again = {"nested": {"kept": [1, 2], "added": "x", "again": "é"}}
    with runtime(t.template(), tap=False) as pipeline:
        arn = pipeline.stepfunctions.create_state_machine(name="history", definition=json.dumps(definition),
                                                          roleArn="arn:aws:iam::123456789012:role/r")["stateMachineArn"]
        execution = pipeline.stepfunctions.start_execution(stateMachineArn=arn, input=json.dumps(given))["executionArn"]
        pipeline.drain()
        history = moto_patches.execution_history(execution)
    compact = lambda value: json.dumps(value, separators=(",", ":"))  # noqa: E731 - moto's to_json_str, ASCII
    details = [event.get("stateEnteredEventDetails") or event.get("stateExitedEventDetails") for event in history
               if event["type"] in ("PassStateEntered", "PassStateExited")]
    assert details == [
        {"name": "Add", "input": compact(given), "inputDetails": {"truncated": False}},
        {"name": "Add", "output": compact(after_add), "outputDetails": {"truncated": False},
         "assignedVariables": {"marker": '"on"'}, "assignedVariablesDetails": {"truncated": False}},
        {"name": "Again", "input": compact(after_add), "inputDetails": {"truncated": False}},
        {"name": "Again", "output": compact(after_again), "outputDetails": {"truncated": False}},
    ]


def test_a_state_without_a_timeout_runs_on_the_execution_s_thread_with_moto_s_results_and_errors(monkeypatch):
    """A Parallel state with no timeout of its own starts no thread to wait on (its branches still have theirs);
    its output, and a failure caught from it, are what moto's own evaluation gives."""
    from moto.stepfunctions.parser.asl.component.state.exec import execute_state

    def no_thread(*args, **kwargs):
        raise AssertionError("a state without a timeout was evaluated on a thread of its own")

    monkeypatch.setattr(execute_state, "Thread", no_thread)
    branch = {"StartAt": "One", "States": {"One": {"Type": "Pass", "Result": 1, "End": True}}}
    failing = {"StartAt": "Boom", "States": {"Boom": {"Type": "Fail", "Error": "Boom", "Cause": "on purpose"}}}
    definition = {"StartAt": "Both", "States": {
        "Both": {"Type": "Parallel", "Branches": [branch, branch], "ResultPath": "$.both", "Next": "Failing"},
        "Failing": {"Type": "Parallel", "Branches": [failing], "Catch": [
            {"ErrorEquals": ["Boom"], "ResultPath": "$.error", "Next": "Done"}], "Next": "Done"},
        "Done": {"Type": "Succeed"}}}
    with runtime(t.template(), tap=False) as pipeline:
        arn = pipeline.stepfunctions.create_state_machine(
            name="inline", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/r")["stateMachineArn"]
        execution = pipeline.stepfunctions.start_execution(stateMachineArn=arn, input='{"given": true}')["executionArn"]
        pipeline.drain()
        described = pipeline.stepfunctions.describe_execution(executionArn=execution)
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"given": True, "both": [1, 1],
                                                "error": {"Error": "Boom", "Cause": "on purpose"}}


def test_a_task_retried_on_a_shared_input_sees_the_same_input_each_attempt_and_keeps_it():
    """A Task's frame shares the state's input: its attempts each select from the input as it was given,
    and the state's output after the last is that input with the error, as moto's own copy gave."""
    given = {"queue": "https://sqs.us-east-1.amazonaws.com/123456789012/missing", "body": {"pixels": list(range(40))}}
    definition = {"StartAt": "Send", "States": {
        "Send": {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:sqs:sendMessage",
                 "Parameters": {"QueueUrl.$": "$.queue", "MessageBody.$": "States.JsonToString($.body)"},
                 "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "BackoffRate": 1,
                            "MaxAttempts": 2}],
                 "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Done"}], "End": True},
        "Done": {"Type": "Succeed"}}}
    with runtime(t.template(), tap=False) as pipeline:
        arn = pipeline.stepfunctions.create_state_machine(
            name="retried", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/r")["stateMachineArn"]
        execution = pipeline.stepfunctions.start_execution(stateMachineArn=arn, input=json.dumps(given))["executionArn"]
        pipeline.drain()
        described = pipeline.stepfunctions.describe_execution(executionArn=execution)
        history = moto_patches.execution_history(execution)
    scheduled = [json.loads(event["taskScheduledEventDetails"]["parameters"]) for event in history
                 if event["type"] == "TaskScheduled"]
    assert len(scheduled) == 3 and all(p == {"QueueUrl": given["queue"], "MessageBody": json.dumps(given["body"],
                                                                                               separators=(",", ":"))}
                                       for p in scheduled), scheduled
    output = json.loads(described["output"])
    assert described["status"] == "SUCCEEDED" and {k: v for k, v in output.items() if k != "error"} == given
    assert set(output["error"]) == {"Error", "Cause"}


def test_a_task_token_s_output_that_is_not_json_is_refused_and_the_task_goes_on_waiting():
    """As AWS: ``SendTaskSuccess`` with an output that is not JSON is ``InvalidOutput`` and changes nothing (moto
    passed it on and the execution failed); a start with an input that is not JSON says its error code."""
    import time

    from botocore.exceptions import ClientError

    definition = {"StartAt": "Wait", "States": {"Wait": {
        "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken", "End": True,
        "Parameters": {"QueueUrl.$": "$.queue", "MessageBody": {"token.$": "$$.Task.Token"}}}}}
    with runtime(t.template(), tap=False) as pipeline:
        sfn, sqs = pipeline.stepfunctions, pipeline.sqs
        queue = sqs.create_queue(QueueName="tokens")["QueueUrl"]
        arn = sfn.create_state_machine(name="waits", definition=json.dumps(definition),
                                       roleArn="arn:aws:iam::123456789012:role/r")["stateMachineArn"]
        with pytest.raises(ClientError) as refused_start:
            sfn.start_execution(stateMachineArn=arn, input="not json")
        assert refused_start.value.response["Error"]["Code"] == "InvalidExecutionInput"
        execution = sfn.start_execution(stateMachineArn=arn, input=json.dumps({"queue": queue}))["executionArn"]
        (message,) = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=10)["Messages"]
        token = json.loads(message["Body"])["token"]
        with pytest.raises(ClientError) as refused:
            sfn.send_task_success(taskToken=token, output="not json")
        assert refused.value.response["Error"]["Code"] == "InvalidOutput"
        assert sfn.describe_execution(executionArn=execution)["status"] == "RUNNING"
        sfn.send_task_success(taskToken=token, output=json.dumps({"approved": True}))
        deadline = time.monotonic() + 10
        while (described := sfn.describe_execution(executionArn=execution))["status"] == "RUNNING":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # A closed task's token is TaskTimedOut, as AWS answers it; one never issued stays InvalidToken.
        for answer in (lambda: sfn.send_task_success(taskToken=token, output="{}"),
                       lambda: sfn.send_task_failure(taskToken=token, error="Late")):
            with pytest.raises(ClientError) as closed:
                answer()
            assert closed.value.response["Error"]["Code"] == "TaskTimedOut"
        with pytest.raises(ClientError) as unknown:
            sfn.send_task_success(taskToken="never-issued", output="{}")
        assert unknown.value.response["Error"]["Code"] == "InvalidToken"
    assert described["status"] == "SUCCEEDED" and json.loads(described["output"]) == {"approved": True}


def test_an_execution_s_history_is_paged_as_aws_pages_it():
    """maxResults, reverseOrder and nextToken: the pages, put together, are the whole history in the order asked."""
    steps = {f"P{n}": {"Type": "Pass", "Next": f"P{n + 1}"} for n in range(5)} | {"P5": {"Type": "Pass", "End": True}}
    with runtime(t.template(), tap=False) as pipeline:
        sfn = pipeline.stepfunctions
        arn = sfn.create_state_machine(name="passes", definition=json.dumps({"StartAt": "P0", "States": steps}),
                                       roleArn="arn:aws:iam::123456789012:role/r")["stateMachineArn"]
        execution = sfn.start_execution(stateMachineArn=arn, input="{}")["executionArn"]
        pipeline.drain()
        whole = sfn.get_execution_history(executionArn=execution)
        first = sfn.get_execution_history(executionArn=execution, maxResults=3, reverseOrder=True)
        pages = [event for page in sfn.get_paginator("get_execution_history").paginate(
            executionArn=execution, reverseOrder=True, PaginationConfig={"PageSize": 4}) for event in page["events"]]
    events = whole["events"]
    assert len(events) > 10 and "nextToken" not in whole  # within one default page of 100
    assert first["events"] == events[::-1][:3] and first["nextToken"]
    assert pages == events[::-1]


ATTRIBUTES = {"reason": {"DataType": "String", "StringValue": "late"},
              "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
              "tries": {"DataType": "Number.int", "StringValue": "3"}}
VARYING = ("SentTimestamp", "ApproximateFirstReceiveTimestamp", "SequenceNumber")  # per message or per receive


def as_compared(message: dict) -> dict:
    """A received message without what differs between two receives of equal messages (ids, handles, times)."""
    attributes = {k: v for k, v in message["Attributes"].items() if k not in VARYING}
    return {k: v for k, v in message.items() if k not in ("MessageId", "ReceiptHandle")} | {"Attributes": attributes}


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_a_receive_in_process_answers_as_the_api_does(patched_sqs, fifo):
    sqs, _ = patched_sqs
    suffix, extra = (".fifo", {"FifoQueue": "true"}) if fifo else ("", {})
    urls = [sqs.create_queue(QueueName=f"{name}{suffix}", Attributes=extra)["QueueUrl"] for name in ("api", "direct")]
    for url in urls:
        for n in range(3):
            sqs.send_message(QueueUrl=url, MessageBody=f"m{n}", MessageAttributes=ATTRIBUTES if n else {},
                             MessageSystemAttributes={"AWSTraceHeader": {"DataType": "String",
                                                                         "StringValue": "Root=1-a"}},
                             **({"MessageGroupId": "g", "MessageDeduplicationId": f"d{n}"} if fifo else {}))
    by_api = sqs.receive_message(QueueUrl=urls[0], MaxNumberOfMessages=10, AttributeNames=["All"],
                                 MessageAttributeNames=["All"])["Messages"]
    direct = moto_patches.receive_in_process(f"arn:aws:sqs:us-east-1:123456789012:direct{suffix}", 10)
    assert [as_compared(m) for m in direct] == [as_compared(m) for m in by_api]
    assert len(direct) == 3 and set(direct[0]["Attributes"]) == set(by_api[0]["Attributes"])
    # received means in flight, as for the API: a second receive finds nothing; the handles delete them
    assert moto_patches.receive_in_process(f"arn:aws:sqs:us-east-1:123456789012:direct{suffix}", 10) == []
    moto_patches.delete_in_process(f"arn:aws:sqs:us-east-1:123456789012:direct{suffix}",
                                   [m["ReceiptHandle"] for m in direct] + ["stale-handle"])
    counts = sqs.get_queue_attributes(QueueUrl=urls[1], AttributeNames=["All"])["Attributes"]
    assert (counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesNotVisible"]) == ("0", "0")


def test_a_receive_in_process_applies_the_queue_s_visibility_and_redrive(patched_sqs):
    from botocore.exceptions import ClientError

    sqs, _ = patched_sqs
    dlq = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    redrive = json.dumps({"deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:dlq", "maxReceiveCount": "2"})
    url = sqs.create_queue(QueueName="work",
                           Attributes={"RedrivePolicy": redrive, "VisibilityTimeout": "0"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="poison")
    arn = "arn:aws:sqs:us-east-1:123456789012:work"
    counts = [moto_patches.receive_in_process(arn, 10)[0]["Attributes"]["ApproximateReceiveCount"] for _ in range(2)]
    assert counts == ["1", "2"]  # visible again at once (the queue's timeout is 0), counted as the API counts
    assert moto_patches.receive_in_process(arn, 10) == []  # the third receive moves it to the dead-letter queue
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=dlq)["Messages"]] == ["poison"]
    sqs.delete_queue(QueueUrl=url)
    for call in (lambda: moto_patches.receive_in_process(arn, 1), lambda: moto_patches.delete_in_process(arn, ["h"])):
        with pytest.raises(ClientError, match="does not exist"):
            call()


def test_a_start_in_process_answers_as_the_api_does():
    """EventBridge's start of a state machine target (in process) gets the API's execution and the API's errors."""
    from botocore.exceptions import ClientError

    definition = json.dumps({"StartAt": "Keep", "States": {"Keep": {"Type": "Pass", "End": True}}})
    with runtime(t.template(), tap=False) as pipeline:
        sfn = pipeline.stepfunctions
        arn = sfn.create_state_machine(name="started", definition=definition,
                                       roleArn="arn:aws:iam::123456789012:role/r")["stateMachineArn"]
        started = moto_patches.start_execution_in_process(arn, "direct", '{"n": 1}')
        by_api = sfn.start_execution(stateMachineArn=arn, name="api", input='{"n": 1}')["executionArn"]
        assert started == by_api.replace(":api", ":direct")
        pipeline.drain()
        assert json.loads(sfn.describe_execution(executionArn=started)["output"]) == {"n": 1}

        def error_of(call):
            with pytest.raises(ClientError) as raised:
                call()
            return raised.value.response["Error"]["Code"], raised.value.response["Error"]["Message"]

        gone = arn.replace(":started", ":gone")
        for name, machine, given in (("direct", arn, '{"n": 2}'), ("x", gone, "{}"), ("y", arn, "{not json")):
            code, message = error_of(lambda: sfn.start_execution(stateMachineArn=machine, input=given,
                                                                 name=name.replace("direct", "api")))
            assert error_of(lambda: moto_patches.start_execution_in_process(machine, name, given)) == \
                (code or "InvalidExecutionInput", message.replace(":api'", ":direct'"))  # moto's API loses that code
        assert error_of(lambda: moto_patches.start_execution_in_process("not-an-arn", "z", "{}"))[0] == "InvalidArn"


@pytest.mark.parametrize("seed", range(3))
def test_an_events_iso_time_is_the_second_fromtimestamp_shows(seed):
    """as_matched writes a time once per second; the second is fromtimestamp's, whose microsecond rounding
    (half to even) can carry into the next second."""
    import datetime
    import random

    generator = random.Random(seed)
    values = [0, 1, 1_765_000_000, 1_765_000_000.0, 1_765_000_000.9999994, 1_765_000_000.9999995,
              1_765_000_000.9999996, 1_765_000_001.4999995, 1_765_000_001.0000005, -1.5, -0.0000004]
    values += [generator.uniform(0, 4e9) for _ in range(2000)]
    values += [float(generator.randrange(1_700_000_000, 1_800_000_000)) + generator.choice([0.9999995, 0.9999994, 0.5e-6])
               for _ in range(500)]
    for value in values:
        expected = datetime.datetime.fromtimestamp(value, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert moto_patches._iso_time(value) == expected, value
    assert moto_patches._iso_time("2026-12-07T10:00:00Z") == "2026-12-07T10:00:00Z"  # an ISO time put as given


def test_a_response_member_s_possible_names_are_moto_s_in_every_answer():
    """Each kept answer of get_possible_keys is compared with moto's own, on the answers of four services."""
    from moto import mock_aws

    compared = []
    with mock_aws():
        moto_patches.install()
        kept = {picker: picker.__dict__["get_possible_keys"] for picker in (AttributePicker, XFormedAttributePicker)}
        try:
            for picker, once in kept.items():
                def checking(self, context, once=once):
                    answer = once(self, context)
                    assert list(answer) == list(once.original(self, context)), (context.key, type(context.obj))
                    compared.append(answer)
                    return answer

                picker.get_possible_keys = checking
            for _ in range(2):  # the second time from what was kept
                sqs = boto3.client("sqs", region_name="us-east-1")
                url = sqs.create_queue(QueueName="q", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
                sqs.send_message(QueueUrl=url, MessageBody="m", MessageAttributes={"a": {"DataType": "String", "StringValue": "v"}})
                (message,) = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"], AttributeNames=["All"])["Messages"]
                assert message["Body"] == "m" and message["MessageAttributes"]["a"]["StringValue"] == "v"
                assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]["VisibilityTimeout"] == "0"
                events = boto3.client("events", region_name="us-east-1")
                events.put_rule(Name="r", EventPattern=json.dumps({"source": ["s"]}))
                assert [rule["Name"] for rule in events.list_rules()["Rules"]] == ["r"]
                assert events.describe_rule(Name="r")["EventPattern"] == json.dumps({"source": ["s"]})
                dynamodb = boto3.client("dynamodb", region_name="us-east-1")
                if not dynamodb.list_tables()["TableNames"]:
                    dynamodb.create_table(TableName="t", KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                                          AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                                          BillingMode="PAY_PER_REQUEST")
                assert dynamodb.describe_table(TableName="t")["Table"]["KeySchema"][0]["AttributeName"] == "k"
                iam = boto3.client("iam", region_name="us-east-1")
                if not iam.list_roles()["Roles"]:
                    iam.create_role(RoleName="role", AssumeRolePolicyDocument="{}")
                assert iam.get_role(RoleName="role")["Role"]["RoleName"] == "role"
        finally:
            for picker, once in kept.items():
                picker.get_possible_keys = once
            moto_patches.uninstall()
    assert len(compared) > 100


BATCH_ALONE_PROBE = """
import sys
from inferbus.runtime import moto_patches
moto_patches.load_batch_utils_alone()
moto_patches.load_batch_utils_alone()  # twice: idempotent
import moto.stepfunctions.parser.asl.parse.asl_parser
parser_only = sorted(name for name in sys.modules if name.startswith(("moto.ec2", "moto.batch")))
import moto.batch
from moto.batch.utils import JobStatus
from moto.batch.exceptions import ValidationError
import moto.batch.models as batch_models
print(parser_only, batch_models.JobStatus is JobStatus, batch_models.ValidationError is ValidationError)
"""


def test_the_stepfunctions_parser_loads_without_moto_batch_package_and_ec2():
    """Its one import of ``moto.batch.utils`` ran moto.batch's package and so moto.ec2 (1.2 s of every start).

    In a fresh interpreter (this one has moto.batch already): after :func:`load_batch_utils_alone` the parser
    imports neither the package nor EC2, and a later ``import moto.batch`` runs and reuses the same modules.
    """
    import os
    import subprocess
    import sys

    probe = subprocess.run([sys.executable, "-c", BATCH_ALONE_PROBE], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.strip() == "['moto.batch.exceptions', 'moto.batch.utils'] True True"


def test_moto_batch_modules_loaded_alone_import_nothing_of_their_package():
    """The premise of :func:`load_batch_utils_alone`, in moto's source: each module's imports stay outside moto.batch's package."""
    import ast
    import os

    folder = os.path.join(os.path.dirname(moto.__file__), "batch")
    for name in moto_patches.BATCH_MODULES_ALONE:
        with open(os.path.join(folder, f"{name}.py"), encoding="utf-8") as source:
            tree = ast.parse(source.read())
        relative = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level}
        absolute = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and not node.level}
        absolute |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert relative <= set(moto_patches.BATCH_MODULES_ALONE), (name, relative)
        assert not {module for module in absolute if module.startswith("moto.batch")}, (name, absolute)
