"""The chaos ledger allows a repeated result only for a cause recorded for that result, one copy per cause."""

from __future__ import annotations

from inferbus.chaos import Ledger


def test_each_recorded_cause_allows_one_more_copy_of_its_own_result():
    ledger = Ledger()
    ledger.count_repeats([["r1", "r1", "r1"]], {"r1": 2})
    assert (ledger.repeated_results, ledger.repeats_unexplained) == (2, 0)
    ledger.count_repeats([["r1", "r1", "r1"]], {"r1": 1})
    assert (ledger.repeated_results, ledger.repeats_unexplained, ledger.unexplained_results) == (4, 1, ["r1"])


def test_causes_recorded_for_other_results_do_not_cover_a_repeat():
    # A flow-wide bound would pass this: 5 causes against 1 repeat. Result by result, r2's repeat has none.
    ledger = Ledger(processed_twice=1)
    ledger.count_repeats([["r2", "r2"]], {"r1": 5})
    assert ledger.repeats_unexplained == 1 and not ledger.balanced(1)


def test_a_repeat_under_a_fresh_id_is_counted_and_each_id_brings_its_own_causes():
    # One input, one stage, one type, two ids (a producer that did not derive its result's id): still a repeat.
    ledger = Ledger()
    ledger.count_repeats([["r1", "r1-again"]], {})
    assert (ledger.repeated_results, ledger.repeats_unexplained) == (1, 1)
    explained = Ledger()
    explained.count_repeats([["r1", "r1-again"]], {"r1": 1})
    assert (explained.repeated_results, explained.repeats_unexplained) == (1, 0)


def test_nothing_repeated_balances_when_every_input_is_accounted_for_and_none_lost():
    assert Ledger(processed_once=3).balanced(3)
    assert not Ledger(processed_once=2, lost=1).balanced(3)
    assert not Ledger(processed_once=2).balanced(3)


def test_a_consumer_fed_by_a_broker_takes_nothing_from_the_bus_so_it_is_no_stage_downstream():
    import dataclasses

    from inferbus.chaos.run import flow_of
    from inferbus.model.declarations import Channel, Consumer, EventFilter, Pipeline, Producer
    from inferbus.model.rabbitmq import RabbitMqQueue

    producer = Consumer(name="order-scorer", handler="o.h.lambda_handler", accepts=EventFilter("OrderPlaced"),
                        emits="OrderScored")
    taker = Consumer(name="score-auditor", handler="a.h.lambda_handler",
                     accepts=EventFilter("OrderScored", sources=(Producer("order-scorer"),)), emits="ScoreAudited")
    assert [c.name for c in flow_of(Pipeline((producer, taker)), producer).stages] == ["order-scorer", "score-auditor"]
    on_queue = dataclasses.replace(taker, channel=Channel.RABBITMQ, broker=RabbitMqQueue(queue="scores"))
    assert [c.name for c in flow_of(Pipeline((producer, on_queue)), producer).stages] == ["order-scorer"]


# -- following an input down a flow whose levels take only some of the results above -----------------

def _branching_flow():
    """score -> (approve | review) -> (recommend): review also emits a result nothing below takes."""
    from inferbus.chaos.run import flow_of
    from inferbus.model.declarations import Consumer, EventFilter, Pipeline, Producer, Workflow

    score = Consumer(name="score", handler="s.h.lambda_handler", accepts=EventFilter("Submitted"), emits="Scored")
    approve = Workflow(name="approve", definition="a.asl.json", accepts=EventFilter("Scored", sources=(Producer("score"),)),
                       emits=("Approved",), failure="ApproveFailed")
    review = Workflow(name="review", definition="r.asl.json", accepts=EventFilter("Scored", sources=(Producer("score"),)),
                      emits=("Reviewed", "Approved"), failure="ReviewFailed")
    recommend = Consumer(name="recommend", handler="r.h.lambda_handler", emits="Recommended",
                         accepts=EventFilter("Approved", sources=(Producer("approve"), Producer("review"))))
    pipeline = Pipeline((score, recommend), (approve, review))
    return flow_of(pipeline, score)


def test_each_stage_appears_once_even_when_two_stages_above_feed_it():
    flow = _branching_flow()
    assert [[stage.name for stage in level] for level in flow.levels] == [["score"], ["approve", "review"], ["recommend"]]


def test_an_input_whose_results_nothing_below_takes_is_processed_and_one_taken_but_unanswered_is_lost():
    from inferbus.chaos.run import _outcome

    flow = _branching_flow()
    src = {stage.name: stage.result_source for stage in flow.stages}
    results = {
        "rejected": {(src["score"], "Scored"): ["s1"]}, "s1": {(src["review"], "Reviewed"): ["v1"]},
        "approved": {(src["score"], "Scored"): ["s2"]}, "s2": {(src["review"], "Reviewed"): ["v2"],
                                                              (src["review"], "Approved"): ["a2"]},
        "a2": {(src["recommend"], "Recommended"): ["r2"]},
        "dropped": {(src["score"], "Scored"): ["s3"]}, "s3": {(src["approve"], "Approved"): ["a3"]},
    }
    outcomes = {event_id: _outcome(flow, event_id, results, {}, set())[1] for event_id in ("rejected", "approved", "dropped")}
    assert outcomes == {"rejected": "processed", "approved": "processed", "dropped": "lost"}


def test_an_input_whose_result_waits_in_a_dlq_below_the_root_is_dead_lettered_not_lost():
    from inferbus.chaos.run import _outcome

    flow = _branching_flow()
    src = {stage.name: stage.result_source for stage in flow.stages}
    results = {"held": {(src["score"], "Scored"): ["s4"]}, "s4": {(src["approve"], "Approved"): ["a4"]}}
    assert _outcome(flow, "held", results, {}, set(), {"a4"})[1] == "dead-lettered"
    assert _outcome(flow, "held", results, {}, set(), set())[1] == "lost"
