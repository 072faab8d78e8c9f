"""A chaos run's rate figures: every record a rate-limited consumer took, per second, against rate + burst / seconds
(the most its bucket can grant), and the inputs in its DLQ it never once admitted (sent there by the rate)."""

from __future__ import annotations

import pytest
from inferbus_lambda.metric_names import RECORDS_LET_THROUGH, RECORDS_OVER_RATE
from inferbus_lambda.rate_limit import InMemoryTokenBucket, burst

from inferbus.chaos import ChaosReport, FaultRates, FlowReport, chaos_overrides
from inferbus.chaos.rate_limits import rate_held
from inferbus.model.declarations import Consumer
from tests.declared import PIPELINE


def admissions_from(bucket: InMemoryTokenBucket, *, batches: int, batch: int, every_ms: int) -> list[tuple[float, int]]:
    """What a consumer on ``bucket`` admits taking ``batch`` records every ``every_ms`` (a clock of its own)."""
    admitted = []
    for n in range(batches):
        granted = bucket.take(batch, now_ms=n * every_ms)
        if granted:
            admitted.append((n * every_ms / 1000, granted))
    return admitted


@pytest.mark.parametrize("rate", [0.5, 7.0, 40.0])
def test_what_a_bucket_grants_is_always_within_the_bound(rate):
    # The bound is the bucket's own arithmetic: whatever the rate and however hard it is pushed, never above it.
    bucket = InMemoryTokenBucket(scope="s", rate=rate, clock_ms=lambda: 0)
    admissions = admissions_from(bucket, batches=400, batch=10, every_ms=50)
    held = rate_held("s", rate, admissions, {}, admitted_ids=set(), dead_letter_ids=set())
    assert held.burst == burst(rate) and held.taken == sum(count for _, count in admissions)
    assert held.observed <= held.bound and held.held


def test_records_taken_past_the_bound_are_not_held_let_through_or_not():
    admissions = [(0.0, 10), (1.0, 10), (2.0, 10)]  # 30 in 2 s at a declared 5/s: bound 5 + 5/2 = 7.5/s
    metrics = {RECORDS_LET_THROUGH: [4.0, 2.0], RECORDS_OVER_RATE: [7.0]}
    held = rate_held("s", 5.0, admissions, metrics, admitted_ids=set(), dead_letter_ids=set())
    assert (held.observed, held.bound, held.let_through, held.sent_back) == (15.0, 7.5, 6, 7)
    assert not held.held


def test_an_input_in_the_dlq_never_admitted_was_sent_there_by_the_rate():
    admissions = [(0.0, 2)]
    held = rate_held("s", 5.0, admissions, {}, admitted_ids={"a", "b"}, dead_letter_ids={"b", "c"})
    assert held.dead_lettered_over_rate == 1 and not held.held  # "c": every delivery sent back
    admitted = rate_held("s", 5.0, admissions, {}, admitted_ids={"a", "b"}, dead_letter_ids={"b"})
    assert admitted.dead_lettered_over_rate == 0 and admitted.held  # "b" failed for a reason of its own


def test_a_flow_whose_consumer_did_not_hold_its_rate_does_not_balance():
    flow = FlowReport("f", ["s"], 0)
    assert flow.balanced  # nothing sent, nothing owed
    flow.rates_held["s"] = rate_held("s", 1.0, [(0.0, 10), (1.0, 10)], {}, admitted_ids=set(), dead_letter_ids=set())
    assert not flow.balanced
    report = ChaosReport(0, FaultRates(), 7, flows={"f": flow})
    figures = report.as_dict()["flows"]["f"]["rates_held"]["s"]
    assert (figures["observed"], figures["bound"], figures["held"], report.as_dict()["balanced"]) == (20.0, 2.0, False, False)


def test_chaos_rate_limits_every_consumer_of_a_flow_and_only_when_asked():
    from inferbus.chaos import resolve_flows

    for flow in resolve_flows(PIPELINE, "all"):
        consumers = [stage.name for stage in flow.stages if isinstance(stage, Consumer)]
        limited = chaos_overrides(flow, 10, rate=12.5)
        assert {key for key in limited if key.endswith(".max_events_per_second")} == \
            {f"{name}.max_events_per_second" for name in consumers}
        assert set(limited.values()) - {10, 0, 1} <= {12.5}
        assert not any(key.endswith(".max_events_per_second") for key in chaos_overrides(flow, 10))
