"""The consumer on an ordered batch (records with a group): a failure holds back its group's later
records, other groups and unordered records go on, and no result overtakes an earlier one."""

from __future__ import annotations

import json

from aws_lambda_powertools import Logger
from inferbus_lambda.claims import InMemoryClaimStore
from inferbus_lambda.consumer import InferenceConsumer, RecordStatus, expect_type
from inferbus_lambda.contracts import ImageSubmitted, from_put_events_entry, new_event
from inferbus_lambda.sources import SourceRecord, SqsRecordSource


class Metrics:
    def add_metric(self, **_: object) -> None:
        """Outcomes are read from the report."""


def record(event_id: str, group: str | None) -> SourceRecord:
    event = new_event(ImageSubmitted(pixels=[1] * 64), source="t", event_id=event_id)
    body = json.dumps({"source": event.source, "detail-type": event.type, "detail": event.model_dump(mode="json")})
    return SourceRecord(f"m-{event_id}", body, group=group)


def consumer(failing: set[str], calls: list[list[str]], published: list[str]) -> InferenceConsumer:
    def infer(events):
        calls.append([event.id for event in events])
        return [RuntimeError("model refused") if event.id in failing else ImageSubmitted(pixels=event.data.pixels)
                for event in events]

    def publish(entries):
        published.extend(str(from_put_events_entry(entry).subject) for entry in entries)
        return []

    return InferenceConsumer(source=SqsRecordSource(consumer="t"), parse=expect_type("ImageSubmitted"), infer=infer,
                             claims=InMemoryClaimStore(scope="t", expires_after_seconds=60), publish=publish,
                             result_source="inferbus.t", bus_name="bus", metrics=Metrics(), logger=Logger(service="t"))


def test_a_failed_record_holds_back_its_groups_later_records_and_nothing_else():
    calls: list[list[str]] = []
    published: list[str] = []
    batch = [record("a1", "a"), record("b1", "b"), record("a2", "a"), record("u1", None), record("a3", "a"),
             record("b2", "b")]
    report = consumer({"a1"}, calls, published).process(batch, remaining_ms=None)
    status = {record_id: outcome.status for record_id, outcome in report.outcomes.items()}
    assert status == {"m-a1": RecordStatus.FAILED, "m-a2": RecordStatus.WAITING, "m-a3": RecordStatus.WAITING,
                      "m-b1": RecordStatus.PUBLISHED, "m-b2": RecordStatus.PUBLISHED, "m-u1": RecordStatus.PUBLISHED}
    assert report.failed_ids == ["m-a1", "m-a2", "m-a3"]  # what comes back: the failed record and those behind it
    assert calls == [["a1", "b1", "u1"], ["b2"]]  # a2, a3 never reached the model
    assert published == ["b1", "u1", "b2"]


def test_a_group_whose_later_record_fails_keeps_what_came_before_it():
    calls: list[list[str]] = []
    published: list[str] = []
    batch = [record("a1", "a"), record("a2", "a"), record("a3", "a"), record("a4", "a")]
    report = consumer({"a3"}, calls, published).process(batch, remaining_ms=None)
    assert published == ["a1", "a2"] and report.failed_ids == ["m-a3", "m-a4"]
    assert calls == [["a1"], ["a2"], ["a3"]]  # one round per position in the group


def test_an_unordered_batch_is_still_one_model_call():
    calls: list[list[str]] = []
    published: list[str] = []
    batch = [record(f"u{i}", None) for i in range(5)]
    report = consumer({"u2"}, calls, published).process(batch, remaining_ms=None)
    assert calls == [["u0", "u1", "u2", "u3", "u4"]] and report.failed_ids == ["m-u2"]
    assert published == ["u0", "u1", "u3", "u4"]


def test_sqs_records_carry_their_fifo_message_group():
    source = SqsRecordSource(consumer="t")
    records = source.records({"Records": [
        {"messageId": "1", "body": "{}", "attributes": {"MessageGroupId": "customer-7", "ApproximateReceiveCount": "1"}},
        {"messageId": "2", "body": "{}", "attributes": {"ApproximateReceiveCount": "1"}}]})
    assert [r.group for r in records] == ["customer-7", None]
