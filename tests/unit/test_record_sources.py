"""The SQS record source: how a batch is read, answered and dead-lettered; the registry of sources."""

from __future__ import annotations

import pytest
from inferbus_lambda.environment import ConsumerEnvironment
from inferbus_lambda.errors import ConfigurationError
from inferbus_lambda.rejections import DeadLetter
from inferbus_lambda.sources import RECORD_SOURCES, RecordSource, SourceRecord, SqsRecordSource, record_source

EVENT = {"Records": [
    {"messageId": "m-1", "body": "{\"a\": 1}", "attributes": {"ApproximateReceiveCount": "3", "SentTimestamp": "1"}},
    {"messageId": "m-2", "body": "x"},  # no attributes: a first delivery
    {"messageId": "m-3", "body": "y", "attributes": {"ApproximateReceiveCount": "many"}},
]}


def test_records_are_read_in_order_with_their_attempt():
    records = SqsRecordSource(consumer="c").records(EVENT)
    assert [(r.record_id, r.body, r.attempt) for r in records] == [("m-1", "{\"a\": 1}", 3), ("m-2", "x", 1), ("m-3", "y", 1)]
    assert records[0].attributes["SentTimestamp"] == "1"


def test_the_answer_names_only_the_failed_records():
    assert SqsRecordSource(consumer="c").batch_response(["m-2"]) == {"batchItemFailures": [{"itemIdentifier": "m-2"}]}
    assert SqsRecordSource(consumer="c").batch_response([]) == {"batchItemFailures": []}


def test_the_last_attempt_is_the_queues_max_receive_count():
    source = SqsRecordSource(consumer="c", dead_letter_queue_url="dlq", max_receive_count=3, sqs=lambda: None)
    assert [source.is_last_attempt(r) for r in source.records(EVENT)] == [True, False, False]
    assert source.dead_letters
    unbounded = SqsRecordSource(consumer="c")
    assert not unbounded.is_last_attempt(SourceRecord("m", "b", 99)) and not unbounded.dead_letters


def test_without_a_dead_letter_queue_nothing_is_sent_and_every_letter_stays_failed():
    letters = [DeadLetter("m-1", "failed", "why", 3, "body")]
    assert SqsRecordSource(consumer="c").dead_letter(letters) == {"m-1"}


class Sqs:
    def __init__(self, failed: set[str] = frozenset()):
        self.sent: list[dict] = []
        self.failed = failed

    def send_message_batch(self, QueueUrl, Entries):  # noqa: N803 - boto3's names
        self.sent += [entry | {"QueueUrl": QueueUrl} for entry in Entries]
        return {"Failed": [{"Id": entry["Id"]} for entry in Entries if entry["MessageBody"] in self.failed]}


def test_a_last_attempt_goes_to_the_dlq_unchanged_with_its_reason():
    sqs = Sqs(failed={"refused"})
    source = SqsRecordSource(consumer="inferbus.image-classifier", dead_letter_queue_url="https://dlq", max_receive_count=3,
                             sqs=lambda: sqs)
    unsent = source.dead_letter([DeadLetter("m-1", "failed", "inference: down", 3, "the body"),
                                 DeadLetter("m-2", "in_progress", "held", 3, "refused")])
    assert unsent == {"m-2"}
    first = sqs.sent[0]
    assert (first["QueueUrl"], first["MessageBody"]) == ("https://dlq", "the body")
    attributes = {name: value["StringValue"] for name, value in first["MessageAttributes"].items()}
    assert attributes == {"inferbus-consumer": "inferbus.image-classifier", "inferbus-status": "failed",
                          "inferbus-reason": "inference: down", "inferbus-receives": "3"}


ENVIRONMENT = {"POWERTOOLS_SERVICE_NAME": "image-classifier", "POWERTOOLS_METRICS_NAMESPACE": "Inferbus",
               "IDEMPOTENCY_TABLE_NAME": "claims", "IDEMPOTENCY_TTL_SECONDS": "60", "EVENT_BUS_NAME": "bus",
               "RESULT_SOURCE": "inferbus.image-classifier", "CONSUMES": "ImageSubmitted", "PRODUCES": "ImageClassified",
               "DEAD_LETTER_QUEUE_URL": "https://dlq", "MAX_RECEIVE_COUNT": "4"}


def test_the_source_is_chosen_by_the_environment_and_an_unknown_one_is_named():
    asked = []
    source = record_source(ConsumerEnvironment.from_environ(ENVIRONMENT), lambda service: asked.append(service))
    assert isinstance(source, RecordSource) and source.name == "sqs"
    assert source.is_last_attempt(SourceRecord("m", "b", 4)) and asked == []  # the client is made on first use only
    known = ", ".join(sorted(RECORD_SOURCES))
    with pytest.raises(ConfigurationError, match=f"RECORD_SOURCE='pigeon' names no record source; known: {known}$"):
        record_source(ConsumerEnvironment.from_environ(ENVIRONMENT | {"RECORD_SOURCE": "pigeon"}), lambda s: None)
