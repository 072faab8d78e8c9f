"""Injected faults as the Lambda service would report them, and how the pipeline recovers from each."""

from __future__ import annotations

import numpy as np
import pytest
from inferbus_lambda.contracts import ImageSubmitted, TextSubmitted, new_event, to_put_events_entry

from inferbus.chaos import FaultRates, inject_faults
from inferbus.local import LocalPipeline
from pipeline._held_out import DIGITS as HOLDOUT

IMAGES = np.load(HOLDOUT)["images"]


@pytest.fixture
def pipeline(template):
    with LocalPipeline(template) as running:
        yield running


def send_images(pipeline, count):
    events = [new_event(ImageSubmitted(pixels=[int(v) for v in IMAGES[i]]), source="faults.test") for i in range(count)]
    assert pipeline.put_events([to_put_events_entry(e, pipeline.bus_name) for e in events]) == []
    return events


def classified(pipeline):
    return [e["detail"]["data"]["input_id"] for e in pipeline.tapped_events() if e["detail-type"] == "ImageClassified"]


def test_a_timed_out_invocation_is_redelivered_and_its_claims_do_not_block_it(pipeline):
    function, source = pipeline.consumer("image-classifier").function, pipeline.consumer("image-classifier").source
    faults = inject_faults(function, FaultRates.only(timeout_rate=1.0))
    events = send_images(pipeline, 6)
    timed_out = source.pump(wait=True)
    assert (timed_out.error_type, timed_out.error_message) == ("Sandbox.Timedout", "Task timed out after 30.00 seconds")
    assert source.expired_after_failures == 6  # it had claimed all six before its deadline
    assert classified(pipeline) == []

    faults.rates = None
    pipeline.drain()
    assert sorted(classified(pipeline)) == sorted(e.id for e in events)
    assert not any(line.get("status") == "in_progress" for line in function.logs)


def test_a_crash_after_publishing_half_republishes_nothing(pipeline):
    function, source = pipeline.consumer("image-classifier").function, pipeline.consumer("image-classifier").source
    faults = inject_faults(function, FaultRates.only(crash_after_publish_rate=1.0))
    events = send_images(pipeline, 8)
    crashed = source.pump(wait=True)
    assert crashed.error_type == "Runtime.ExitError"
    first_half = classified(pipeline)
    assert len(first_half) == 4  # published before the crash, and their claims completed

    faults.rates = None
    pipeline.drain()
    results = first_half + classified(pipeline)
    assert sorted(results) == sorted(e.id for e in events)  # every image once: no result published twice
    assert sum(function.metrics["DuplicatesSkipped"]) == 4


def test_a_crash_between_publishing_and_completing_repeats_at_most_one_group(pipeline):
    function, source = pipeline.consumer("image-classifier").function, pipeline.consumer("image-classifier").source
    faults = inject_faults(function, FaultRates.only(crash_before_complete_rate=1.0), seed=2)
    events = send_images(pipeline, 60)
    crashed = source.pump(wait=True)
    assert crashed.error_type == "Runtime.ExitError"
    before_crash = classified(pipeline)

    faults.rates = None
    pipeline.drain()
    results = before_crash + classified(pipeline)  # reading the tap takes what it read
    assert sorted(set(results)) == sorted(e.id for e in events)  # every image has its result
    repeated = len(results) - len(set(results))
    # only the group published right before the crash comes again: groups completed before it are skipped
    assert 0 < repeated <= 25 and repeated == len(before_crash) - sum(function.metrics["DuplicatesSkipped"])


def test_a_throttled_claim_fails_only_its_records_and_they_come_back(pipeline):
    function, source = pipeline.consumer("image-classifier").function, pipeline.consumer("image-classifier").source
    faults = inject_faults(function, FaultRates.only(claim_throttle_rate=1.0))
    events = send_images(pipeline, 5)
    throttled = source.pump(wait=True)
    assert throttled.error is None and len(throttled.failed_ids) == 5  # reported per record; the invocation went on
    assert {line["reason"] for line in function.logs if line.get("status") == "failed"} == {
        "claim: the idempotency table throttled the request; retried later"}

    faults.rates = None
    pipeline.drain()
    assert sorted(classified(pipeline)) == sorted(e.id for e in events)


def test_records_delivered_twice_are_processed_once(pipeline):
    source = pipeline.consumer("image-classifier").source
    source.redeliver(1.0, seed=1)
    events = send_images(pipeline, 5)
    pipeline.drain()
    assert source.duplicates_delivered >= 5
    assert sorted(classified(pipeline)) == sorted(e.id for e in events)
    assert sum(pipeline.consumer("image-classifier").function.metrics["DuplicatesSkipped"]) == source.duplicates_delivered


def test_injected_record_errors_fail_only_those_records(pipeline):
    function = pipeline.consumer("image-classifier").function
    faults = inject_faults(function, FaultRates.only(record_error_rate=0.5), seed=3)
    events = send_images(pipeline, 20)
    invocation = pipeline.consumer("image-classifier").source.pump(wait=True)
    assert invocation.error is None and 0 < len(invocation.failed_ids) < 20
    assert len(classified(pipeline)) == 20 - len(invocation.failed_ids)
    faults.rates = None
    pipeline.drain()
    assert len(classified(pipeline)) == len(invocation.failed_ids)
    assert len(events) == 20


def test_a_workflow_step_that_times_out_is_retried_as_lambda_reports_it(pipeline):
    inject_faults(pipeline.task_function("text-pipeline", "Classify"), FaultRates.only(step_timeout_rate=1.0))
    submitted = new_event(TextSubmitted(text="It arrived."), source="faults.test")
    pipeline.put_events([to_put_events_entry(submitted, pipeline.bus_name)])
    pipeline.drain()
    invocations = pipeline.task_function("text-pipeline", "Classify").invocations
    assert [i.error_type for i in invocations] == ["Sandbox.Timedout"] * 4  # the first try and three retries
    (failed,) = [e["detail"]["data"] for e in pipeline.tapped_events() if e["detail-type"] == "TextAnalysisFailed"]
    assert failed["error"] == "Sandbox.Timedout" and failed["input_id"] == submitted.id
