"""Fault injection wraps a consumer's parts, never its code path; what happened is counted as it happened."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import fields
from types import SimpleNamespace

import pytest
from aws_lambda_powertools import Logger
from inferbus_lambda.claims import InMemoryClaimStore
from inferbus_lambda.consumer import InferenceConsumer, RecordStatus, expect_type
from inferbus_lambda.contracts import ImageSubmitted, new_event
from inferbus_lambda.errors import TransientError
from inferbus_lambda.publishing import publish_events
from inferbus_lambda.sources import SqsRecordSource

from inferbus.chaos.faults import Cause, FaultInjector, InjectedCrash, InjectedTimeout
from inferbus.chaos.rates import FaultRates


class Metrics:
    def add_metric(self, **_: object) -> None:
        """Counts are read from the report here."""


class Bus:
    def __init__(self) -> None:
        self.entries: list[dict] = []

    def put_events(self, Entries):  # noqa: N803 - boto3's name
        self.entries += Entries
        return {"FailedEntryCount": 0, "Entries": [{"EventId": str(i)} for i, _ in enumerate(Entries)]}


def consumer_handler(store: InMemoryClaimStore):
    """A consumer as consumer_handler builds it, with its AWS calls in memory; the model echoes a pixel."""
    bus = Bus()
    runtime = SimpleNamespace(events=bus, bus=bus)  # the injector wraps ``events``; ``bus`` is what was published
    runtime.consumer = InferenceConsumer(
        source=SqsRecordSource(consumer="inferbus.test"), parse=expect_type("ImageSubmitted"),
        infer=lambda events: [ImageSubmitted(pixels=e.data.pixels) for e in events], claims=store,
        publish=lambda entries: publish_events(runtime.events, entries, sleep=lambda _: None),
        result_source="inferbus.test", bus_name="bus", metrics=Metrics(), logger=Logger(service="chaos-test"))

    def handler(event, context):
        return runtime.consumer.handle(event, context)

    handler.runtime = runtime
    return handler


def batch(count: int) -> dict:
    events = [new_event(ImageSubmitted(pixels=[i % 17] * 64), source="t", event_id=f"img-{i}") for i in range(count)]
    return {"Records": [{"messageId": f"m-{i}", "body": json.dumps({"source": e.source, "detail-type": e.type,
                                                                    "detail": e.model_dump(mode="json")})}
                        for i, e in enumerate(events)]}


CONTEXT = SimpleNamespace(get_remaining_time_in_millis=lambda: 30_000)


def test_without_faults_the_wrapped_handler_answers_as_the_bare_one():
    store = InMemoryClaimStore(scope="t", expires_after_seconds=60)
    injector = FaultInjector(None)
    handler = injector.wrap(consumer_handler(store))
    assert handler(batch(4), CONTEXT) == {"batchItemFailures": []}
    assert len(handler.runtime.bus.entries) == 4 and injector.counts.invocations == 1


def test_a_timeout_strikes_right_after_the_claims_are_written():
    store = InMemoryClaimStore(scope="t", expires_after_seconds=60)
    injector = FaultInjector(FaultRates.only(timeout_rate=1.0))
    handler = injector.wrap(consumer_handler(store))
    with pytest.raises(InjectedTimeout):
        handler(batch(3), CONTEXT)
    assert len(store.records) == 3 and handler.runtime.bus.entries == [] and injector.counts.timeouts == 1


def test_a_crash_before_completing_counts_the_results_it_leaves_published():
    store = InMemoryClaimStore(scope="t", expires_after_seconds=60)
    injector = FaultInjector(FaultRates.only(crash_before_complete_rate=1.0))
    handler = injector.wrap(consumer_handler(store))
    with pytest.raises(InjectedCrash):
        handler(batch(6), CONTEXT)
    published = published_ids(handler)
    assert len(published) == 6 and injector.counts.crashes_before_complete == 1
    # exactly the results it had published, by id, each allowing one more copy
    assert injector.counts.republishable.by_result == Counter(published)
    assert injector.counts.republishable.by_cause == {Cause.CRASH_BEFORE_COMPLETE.value: 6}
    assert {record.state.value for record in store.records.values()} == {"INPROGRESS"}


class RefusingCompletions(InMemoryClaimStore):
    """A store that cannot write completions (DynamoDB throttling them past the SDK's retries)."""

    def put_completed(self, records):
        return [record.key for record in records]


def test_a_crash_after_a_completion_was_refused_still_records_the_results_left_in_progress():
    # The batch's report, which counted refused completions, dies with the invocation: the store's wrapper records them.
    store = RefusingCompletions(scope="t", expires_after_seconds=60)
    injector = FaultInjector(FaultRates.only(crash_after_publish_rate=1.0))
    handler = injector.wrap(consumer_handler(store))
    with pytest.raises(InjectedCrash):
        handler(batch(8), CONTEXT)
    published = published_ids(handler)
    assert len(published) == 4 and injector.counts.republishable.by_result == Counter(published)
    assert injector.counts.republishable.by_cause == {Cause.COMPLETION_NOT_WRITTEN.value: 4}


def test_a_refused_completion_records_only_the_results_it_concerns_and_a_completed_one_none():
    class RefusingOdd(InMemoryClaimStore):
        def put_completed(self, records):
            def odd(record):  # a key is the event's id, then "|" and a digest of its source
                return int(record.key.partition("|")[0].split("-")[1]) % 2

            super().put_completed([r for r in records if not odd(r)])
            return [r.key for r in records if odd(r)]

    injector = FaultInjector(FaultRates.only(record_error_rate=0.0))
    handler = injector.wrap(consumer_handler(RefusingOdd(scope="t", expires_after_seconds=60)))
    assert handler(batch(6), CONTEXT) == {"batchItemFailures": []}
    odd = {json.loads(entry["Detail"])["id"] for entry in handler.runtime.bus.entries
           if int(json.loads(entry["Detail"])["subject"].split("-")[1]) % 2}
    assert set(injector.counts.republishable.by_result) == odd and len(odd) == 3


def test_a_fault_drawn_for_an_invocation_that_never_reached_it_does_not_strike_once_the_faults_are_off():
    store = InMemoryClaimStore(scope="t", expires_after_seconds=60)
    handler = FaultInjector(None).wrap(consumer_handler(store))
    handler(batch(3), CONTEXT)  # processed: a second delivery is a duplicate, which completes nothing
    injector = FaultInjector(FaultRates.only(crash_before_complete_rate=1.0))
    handler = injector.wrap(consumer_handler(store))
    assert handler(batch(3), CONTEXT) == {"batchItemFailures": []} and injector.counts.crashes_before_complete == 0
    injector.rates = None  # the incident is over; the crash drawn above was never reached
    fresh = batch(5)
    fresh["Records"] = fresh["Records"][3:]
    assert handler(fresh, CONTEXT) == {"batchItemFailures": []}
    assert injector.counts.republishable.by_result == {}


def published_ids(handler) -> list[str]:
    return [json.loads(entry["Detail"])["id"] for entry in handler.runtime.bus.entries]


def test_a_crash_after_publishing_half_leaves_that_half_completed_and_the_rest_unsent():
    store = InMemoryClaimStore(scope="t", expires_after_seconds=60)
    injector = FaultInjector(FaultRates.only(crash_after_publish_rate=1.0))
    handler = injector.wrap(consumer_handler(store))
    with pytest.raises(InjectedCrash):
        handler(batch(8), CONTEXT)
    assert len(handler.runtime.bus.entries) == 4
    assert sorted(record.state.value for record in store.records.values()) == ["COMPLETED"] * 4 + ["INPROGRESS"] * 4
    assert injector.counts.republishable.by_result == {}  # what it published, it completed: nothing may repeat


def test_record_errors_fail_those_records_alone_and_are_counted_from_the_report():
    store = InMemoryClaimStore(scope="t", expires_after_seconds=60)
    injector = FaultInjector(FaultRates.only(record_error_rate=0.5), seed=3)
    handler = injector.wrap(consumer_handler(store))
    failed = handler(batch(20), CONTEXT)["batchItemFailures"]
    assert 0 < len(failed) == injector.counts.record_errors < 20
    assert len(handler.runtime.bus.entries) == 20 - len(failed)
    assert len(store.records) == 20 - len(failed)  # the failed records' claims were released


def test_switching_the_faults_off_takes_effect_at_the_next_invocation():
    store = InMemoryClaimStore(scope="t", expires_after_seconds=60)
    injector = FaultInjector(FaultRates.only(record_error_rate=1.0))
    handler = injector.wrap(consumer_handler(store))
    assert len(handler(batch(3), CONTEXT)["batchItemFailures"]) == 3
    injector.rates = None
    assert handler(batch(3), CONTEXT) == {"batchItemFailures": []}
    report = handler.runtime.consumer.process(handler.runtime.consumer.source.records(batch(3)), remaining_ms=None)
    assert report.count(RecordStatus.DUPLICATE) == 3 and injector.counts.duplicates_skipped == 3


def test_a_step_fails_transiently_or_times_out_before_its_code_runs():
    ran = []

    def step(event, context):
        ran.append(event)
        return {"ok": True}

    with pytest.raises(TransientError, match="injected fault"):
        FaultInjector(FaultRates.only(step_error_rate=1.0)).wrap(step)({}, CONTEXT)
    with pytest.raises(InjectedTimeout):
        FaultInjector(FaultRates.only(step_timeout_rate=1.0)).wrap(step)({}, CONTEXT)
    assert ran == [] and FaultInjector(FaultRates.only(record_error_rate=1.0)).wrap(step)({}, CONTEXT) == {"ok": True}


def test_fault_rates_are_checked_and_one_fault_alone_is_easy_to_ask_for():
    assert FaultRates.only(step_error_rate=1.0) == FaultRates(**{f.name: 0.0 for f in fields(FaultRates)} | {"step_error_rate": 1.0})
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        FaultRates(step_error_rate=2)
    with pytest.raises(ValueError, match="0 or more"):
        FaultRates(latency_ms=-1)
    assert all(f.metadata["help"] for f in fields(FaultRates))  # every flag of inferbus chaos has its help
    assert FaultRates.flag(next(f for f in fields(FaultRates) if f.name == "crash_after_publish_rate")) == "--crash-rate"


def test_one_id_from_two_sources_is_two_events_with_two_results():
    """CloudEvents' identity is (source, id): a consumer scores both and publishes two distinct results."""
    handler = consumer_handler(InMemoryClaimStore(scope="c", expires_after_seconds=3600))
    events = [new_event(ImageSubmitted(pixels=[n] * 64), source=source, event_id="img-1")
              for n, source in enumerate(["shop.web", "shop.app"])]
    records = {"Records": [{"messageId": f"m-{i}", "body": json.dumps({"source": e.source, "detail-type": e.type,
                                                                       "detail": e.model_dump(mode="json")})}
                           for i, e in enumerate(events)]}
    assert handler(records, CONTEXT) == {"batchItemFailures": []}
    published = [json.loads(entry["Detail"]) for entry in handler.runtime.bus.entries]
    assert sorted(result["data"]["pixels"][0] for result in published) == [0, 1]
    assert len({result["id"] for result in published}) == 2  # results of two inputs are two events too
