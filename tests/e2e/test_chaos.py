"""Chaos, small enough for CI: faults on purpose, then every event accounted for."""

from __future__ import annotations

import json

import pytest
from inferbus_lambda.contracts import TextSubmitted, from_eventbridge_event, new_event, to_put_events_entry

from inferbus.chaos import FaultRates, chaos_consumer, chaos_overrides, run_chaos
from inferbus.local import LocalPipeline
from inferbus.template import synthesize
from tests.declared import PIPELINE


@pytest.fixture(scope="module")
def small_batches():
    return synthesize(overrides=chaos_overrides(chaos_consumer(PIPELINE, None), batch_size=10))


def test_the_ledger_balances_under_errors_timeouts_crashes_throttling_and_duplicates(small_batches):
    rates = FaultRates(record_error_rate=0.2, timeout_rate=0.08, crash_after_publish_rate=0.05,
                       crash_before_complete_rate=0.05, claim_throttle_rate=0.3, complete_throttle_rate=0.3,
                       duplicate_rate=0.1)
    report = run_chaos(events=400, rates=rates, seed=11, template=small_batches)

    ledger = report.ledger
    assert ledger.processed_once + ledger.processed_twice + ledger.in_dead_letter_queue == 400
    assert ledger.lost == 0
    # results repeat only where the faults open a window, and no more than the bound they allow
    assert ledger.repeated_results <= report.repeat_bound
    assert report.results_before_complete <= 25 * report.crashes_before_complete
    assert report.balanced
    # every kind of fault really happened
    assert report.records_failed_by_injection / report.deliveries >= 0.1
    assert report.failed_invocations.get("Sandbox.Timedout", 0) >= 1
    assert report.failed_invocations.get("Runtime.ExitError", 0) >= 1
    assert report.duplicates_delivered >= 20 and report.duplicates_skipped >= report.duplicates_delivered
    assert report.claims_expired >= 1  # a failed invocation's claims were released for its redelivery
    assert report.crashes_before_complete >= 1 and report.results_before_complete >= 1
    assert report.records_failed_by_claim_throttling >= 1
    # with the faults off, a redrive finishes the job: each event processed exactly once
    assert report.redriven == ledger.in_dead_letter_queue + ledger.dead_lettered_after_processing
    final = report.after_redrive
    assert final.processed_once + final.processed_twice == 400 and final.in_dead_letter_queue == 0
    assert report.result_events == 400 + final.repeated_results


def test_workflow_steps_under_injected_errors_give_each_text_exactly_one_outcome(template):
    with LocalPipeline(template) as pipeline:
        for step in ("Tokenize", "Embed", "Classify"):
            pipeline.task_function("text-pipeline", step).set_environment(
                INFERBUS_FAULTS=json.dumps({"error_rate": 0.3, "seed": 5}))
        texts = [new_event(TextSubmitted(text=f"Review number {i}: it was fine."), source="chaos.test") for i in range(8)]
        assert pipeline.put_events([to_put_events_entry(event, pipeline.bus_name) for event in texts]) == []
        pipeline.drain()
        outcomes = [from_eventbridge_event(e) for e in pipeline.tapped_events() if e["source"] == "inferbus.text-pipeline"]
        by_input = {}
        for outcome in outcomes:
            by_input.setdefault(outcome.data.input_id, []).append(outcome.type)
        assert sorted(by_input) == sorted(event.id for event in texts)
        assert all(len(types) == 1 for types in by_input.values())  # one result or one failure, never both
        errors = [i for step in ("Tokenize", "Embed", "Classify")
                  for i in pipeline.task_function("text-pipeline", step).invocations if i.error_type == "TransientError"]
        assert errors  # the faults fired, and the retries absorbed most of them
        assert sum(types == ["TextAnalyzed"] for types in by_input.values()) >= 6
