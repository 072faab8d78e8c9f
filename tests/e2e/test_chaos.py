"""Chaos, small enough for CI: every flow under faults on purpose, then every input accounted for."""

from __future__ import annotations

import pytest

from inferbus.chaos import ChaosError, FaultRates, FlowReport, chaos_overrides, resolve_flows, run_chaos
from inferbus.chaos.faults import Cause
from inferbus.model.declarations import Consumer
from inferbus.template import synthesize
from tests.declared import PIPELINE

FLOWS = resolve_flows(PIPELINE, "all")
CONSUMER_FLOW = next(flow for flow in FLOWS if isinstance(flow.root, Consumer) and len(flow.levels) == 1)
CHAINED_FLOW = next((flow for flow in FLOWS if len(flow.levels) > 1), None)
WORKFLOW_FLOW = next((flow for flow in FLOWS if not isinstance(flow.root, Consumer)), None)


@pytest.fixture(scope="module")
def small_batches():
    overrides = {}
    for flow in FLOWS:
        overrides |= chaos_overrides(flow, batch_size=10)
    return synthesize(overrides=overrides)


def test_a_consumers_ledger_balances_under_errors_timeouts_crashes_throttling_and_duplicates(small_batches):
    rates = FaultRates(record_error_rate=0.2, timeout_rate=0.08, crash_after_publish_rate=0.05,
                       crash_before_complete_rate=0.05, claim_throttle_rate=0.3, complete_throttle_rate=0.3,
                       put_events_throttle_rate=0.1, duplicate_rate=0.1)
    report = run_chaos(events=400, rates=rates, flow=CONSUMER_FLOW.name, seed=11, template=small_batches)
    flow = report.flows[CONSUMER_FLOW.name]

    ledger = flow.ledger
    assert ledger.processed_once + ledger.processed_twice + ledger.in_dead_letter_queue == 400
    assert ledger.lost == 0
    # results repeat only where the faults recorded a window for that very result
    assert ledger.repeats_unexplained == 0 and ledger.repeated_results <= sum(flow.republishable.values())
    assert flow.republishable_by_cause.get(Cause.CRASH_BEFORE_COMPLETE.value, 0) <= 25 * flow.crashes_before_complete
    assert report.balanced
    # every kind of fault really happened
    assert flow.injected_errors / flow.injectable >= 0.1
    assert flow.failed_invocations.get("Sandbox.Timedout", 0) >= 1
    assert flow.failed_invocations.get("Runtime.ExitError", 0) >= 1
    assert flow.duplicates_delivered >= 20 and flow.duplicates_skipped >= flow.duplicates_delivered
    assert flow.claims_expired >= 1  # a failed invocation's claims were released for its redelivery
    assert flow.crashes_before_complete >= 1 and flow.republishable_by_cause[Cause.CRASH_BEFORE_COMPLETE.value] >= 1
    assert flow.records_failed_by_claim_throttling >= 1
    # with the faults off, a redrive finishes the job: each event processed
    assert flow.redriven == ledger.in_dead_letter_queue + ledger.dead_lettered_after_processing
    final = flow.after_redrive
    assert final.processed_once + final.processed_twice == 400 and final.in_dead_letter_queue == 0
    assert flow.result_events == 400 + final.repeated_results


def assert_every_repeat_has_its_recorded_cause(flow: FlowReport) -> None:
    for ledger in (flow.ledger, flow.after_redrive or flow.ledger):  # after a redrive, if the DLQ held any
        assert ledger.lost == 0
        assert ledger.repeats_unexplained == 0, ledger.unexplained_results
    assert flow.balanced


def test_every_crash_after_publishing_with_every_completion_refused_repeats_only_what_was_recorded(small_batches):
    # The crash loses the batch's report, which counted the refused completions: an estimate from it allowed 0 repeats.
    rates = FaultRates.only(crash_after_publish_rate=1.0, complete_throttle_rate=1.0)
    report = run_chaos(events=30, rates=rates, flow=CONSUMER_FLOW.name, seed=1, template=small_batches)
    flow = report.flows[CONSUMER_FLOW.name]
    assert_every_repeat_has_its_recorded_cause(flow)
    assert flow.ledger.repeated_results >= 10  # the window was wide open, and used
    assert set(flow.republishable_by_cause) == {Cause.COMPLETION_NOT_WRITTEN.value}


def test_timeouts_errors_duplicates_and_crashes_with_every_completion_refused_repeat_only_recorded_results(small_batches):
    # Half the invocations time out after claiming, the rest crash after publishing; no completion is written and
    # every processed record comes twice: each redelivery may republish, and each republished result must be recorded.
    rates = FaultRates.only(timeout_rate=0.5, crash_after_publish_rate=1.0, record_error_rate=0.2, duplicate_rate=1.0,
                            complete_throttle_rate=1.0, put_events_throttle_rate=0.3)
    report = run_chaos(events=30, rates=rates, flow=CONSUMER_FLOW.name, seed=4, template=small_batches)
    flow = report.flows[CONSUMER_FLOW.name]
    assert_every_repeat_has_its_recorded_cause(flow)
    assert flow.failed_invocations.get("Sandbox.Timedout", 0) >= 1 and flow.injected_errors >= 1
    assert flow.ledger.repeated_results >= 1


@pytest.mark.skipif(CHAINED_FLOW is None, reason="no component takes another's results")
def test_a_chained_flow_repeats_a_root_result_only_where_recorded_and_downstream_nothing(small_batches):
    # The risk flow's case, wide open: every root invocation crashes after publishing, no completion is written.
    rates = FaultRates.only(crash_after_publish_rate=1.0, complete_throttle_rate=1.0, duplicate_rate=0.5)
    report = run_chaos(events=20, rates=rates, flow=CHAINED_FLOW.name, seed=2, template=small_batches)
    flow = report.flows[CHAINED_FLOW.name]
    assert_every_repeat_has_its_recorded_cause(flow)
    assert flow.ledger.repeated_results >= 1


@pytest.mark.skipif(WORKFLOW_FLOW is None, reason="no workflow takes inputs of its own")
def test_a_workflows_ledger_balances_with_its_steps_failing_and_timing_out(small_batches):
    rates = FaultRates(step_error_rate=0.3, step_timeout_rate=0.1, duplicate_rate=0.2)
    report = run_chaos(events=40, rates=rates, flow=WORKFLOW_FLOW.name, seed=5, template=small_batches)
    flow = report.flows[WORKFLOW_FLOW.name]
    assert report.balanced, flow.ledger
    assert flow.ledger.processed_once >= 30  # the retries absorbed most faults ...
    assert flow.failed_invocations.get("TransientError", 0) >= 5  # ... which really happened
    assert flow.failed_invocations.get("Sandbox.Timedout", 0) >= 1
    # a duplicate is skipped by Accept, unless its own Accept failed under the faults (then its failure event says so)
    assert flow.duplicates_delivered >= 4 and flow.duplicates_skipped >= flow.duplicates_delivered // 2


@pytest.mark.skipif(CHAINED_FLOW is None, reason="no component takes another's results")
def test_a_chained_flows_ledger_follows_each_input_to_its_last_stage(small_batches):
    report = run_chaos(events=40, flow=CHAINED_FLOW.name, seed=3, template=small_batches)
    flow = report.flows[CHAINED_FLOW.name]
    assert report.balanced, flow.ledger
    assert flow.ledger.pending_review == 0  # the declared reviewer decided every case
    assert len(flow.stages) == sum(len(level) for level in CHAINED_FLOW.levels) > 1


def test_a_flow_is_named_by_component_or_word_and_an_unknown_one_says_what_there_is():
    assert [f.name for f in resolve_flows(PIPELINE, CONSUMER_FLOW.name)] == [CONSUMER_FLOW.name]
    with pytest.raises(ChaosError, match="no such flow"):
        resolve_flows(PIPELINE, "no-such-component")


BELOW_ROOT = next((flow for flow in FLOWS if any(isinstance(stage, Consumer) for level in flow.levels[1:] for stage in level)),
                  None)


@pytest.mark.skipif(BELOW_ROOT is None, reason="no consumer takes another component's results")
def test_once_the_incident_is_over_every_consumers_dlq_in_the_flow_is_redriven(small_batches):
    # Consumers below the root (fed by a workflow's results) dead-letter under the same faults; the redrive
    # moved only the root's DLQ back, so their inputs stayed there and the flow never balanced.
    rates = FaultRates.only(record_error_rate=0.6)
    report = run_chaos(events=40, rates=rates, flow=BELOW_ROOT.name, seed=4, template=small_batches)
    flow = report.flows[BELOW_ROOT.name]
    assert flow.ledger.in_dead_letter_queue > 0  # the faults dead-lettered something to redrive
    assert flow.stuck == 0 and report.balanced, (flow.ledger, flow.after_redrive)
