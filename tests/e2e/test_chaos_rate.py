"""Chaos with a consumer's rate on (``inferbus chaos --rate``): under faults and a backlog far over the rate, the
ledger balances, nothing is lost or sent to a DLQ for being over the rate, and every record the consumer took,
per second, stays within rate + burst / seconds (what its token bucket can grant)."""

from __future__ import annotations

from inferbus.chaos import FaultRates, chaos_overrides, resolve_flows, run_chaos
from inferbus.model.declarations import Consumer
from inferbus.template import synthesize
from tests.declared import PIPELINE

CONSUMER_FLOW = next(flow for flow in resolve_flows(PIPELINE, "all")
                     if isinstance(flow.root, Consumer) and len(flow.levels) == 1)
EVENTS, RATE = 200, 20.0  # 10 s of work at the rate, all sent within the first second or two


def test_a_rate_limited_consumer_holds_its_rate_under_faults_and_sends_nothing_to_a_dlq_for_it():
    rates = FaultRates(record_error_rate=0.1, timeout_rate=0.04, crash_after_publish_rate=0.02,
                       crash_before_complete_rate=0.02, claim_throttle_rate=0.1, complete_throttle_rate=0.1,
                       put_events_throttle_rate=0.1, duplicate_rate=0.1)
    template = synthesize(overrides=chaos_overrides(CONSUMER_FLOW, 10, rate=RATE))
    report = run_chaos(events=EVENTS, rates=rates, flow=CONSUMER_FLOW.name, seed=5, template=template)
    flow = report.flows[CONSUMER_FLOW.name]

    consumers = {stage.name for stage in CONSUMER_FLOW.stages if isinstance(stage, Consumer)}
    assert set(flow.rates_held) == consumers
    held = flow.rates_held[CONSUMER_FLOW.root.name]
    assert held.declared == RATE and held.sent_back > 0  # the rate did hold records back
    assert held.taken >= EVENTS - flow.ledger.in_dead_letter_queue
    assert held.dead_lettered_over_rate == 0
    assert held.observed <= held.bound, (held.observed, held.bound, held.let_through)
    assert flow.ledger.lost == 0 and flow.ledger.repeats_unexplained == 0
    final = flow.after_redrive or flow.ledger
    assert final.processed_once + final.processed_twice == EVENTS and final.in_dead_letter_queue == 0
    assert report.balanced
