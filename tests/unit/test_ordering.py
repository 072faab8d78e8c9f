"""The ordered-consumer check of the demo's ledger: each key's results must follow its send order."""

from __future__ import annotations

import json
import random

from inferbus.demo.report import KindReport
from inferbus.model.ordering import key_of, order_breaks

GROUP_BY = "$.detail.data.customer"


def entry(event_id: str, key: str | None, source: str = "shop") -> dict:
    data = {} if key is None else {"customer": key}
    return {"Source": source, "DetailType": "OrderPlaced", "Detail": json.dumps({"id": event_id, "data": data})}


def test_any_interleaving_of_keys_in_order_is_no_break_and_each_swap_within_a_key_is_one():
    keys = {k: [f"{k}{n}" for n in range(6)] for k in "abcd"}
    sent = [entry(event_id, key) for n in range(6) for key, ids in keys.items() for event_id in [ids[n]]]
    rng = random.Random(3)
    for _ in range(20):  # any merge of the keys' sequences keeps each key's order
        queues = {k: list(ids) for k, ids in keys.items()}
        merged = []
        while any(queues.values()):
            merged.append(queues[rng.choice([k for k, q in queues.items() if q])].pop(0))
        assert order_breaks(GROUP_BY, sent, merged) == 0
    swapped = [*keys["a"][:2], keys["a"][3], keys["a"][2], *keys["a"][4:], *keys["b"]]
    assert order_breaks(GROUP_BY, sent, swapped) == 1


def test_repeats_unknown_ids_and_events_without_a_result_are_not_breaks():
    sent = [entry("a1", "a"), entry("a2", "a"), entry("a3", "a"), entry("a1", "a")]  # a1 sent again last
    assert order_breaks(GROUP_BY, sent, ["a1", "a3", "a1", "other"]) == 0  # a2 dead-lettered: the key moved on
    assert order_breaks(GROUP_BY, sent, ["a3", "a1"]) == 1  # a re-sent event counts where it was first sent


def test_the_key_is_read_as_delivered_and_a_missing_one_is_none():
    assert key_of("$.detail.data.customer", entry("x", "c-7")) == "c-7"
    assert key_of("$.source", entry("x", "c-7", source="till-3")) == "till-3"
    assert key_of("$.detail.data.customer", entry("x", None)) is None
    assert key_of("$.detail.data", entry("x", "c-7")) is None  # an object is no key


def test_a_consumer_with_a_result_out_of_order_does_not_balance():
    kind = KindReport("order-scorer", "OrderPlaced", sent=3, results=3, ordered=True)
    assert kind.balanced and kind.as_dict()["out_of_order_results"] == 0
    kind.out_of_order = 1
    assert not kind.balanced
    assert "out_of_order_results" not in KindReport("plain", "X", sent=1, results=1).as_dict()


def test_chaos_counts_an_ordered_root_consumers_results_out_of_key_order_and_then_does_not_balance():
    from inferbus.chaos.run import Ledger, _order_breaks, flow_of
    from inferbus.model.declarations import Consumer, EventFilter, Pipeline
    from inferbus.model.settings import ConsumerSettings

    ordered = Consumer(name="order-scorer", handler="o.h.lambda_handler", accepts=EventFilter("OrderPlaced"),
                       emits="OrderScored", channel="fifo", group_by=GROUP_BY, settings=ConsumerSettings(batch_size=10))
    plain = Consumer(name="plain-scorer", handler="p.h.lambda_handler", accepts=EventFilter("OrderPlaced"),
                     emits="PlainScored")
    pipeline = Pipeline((ordered, plain))
    sent = [entry("a1", "a"), entry("b1", "b"), entry("a2", "a")]

    def results(producer: Consumer, subjects: list[str]) -> list[dict]:
        return [{"source": producer.result_source, "detail-type": producer.result_type,
                 "detail": {"id": f"r-{s}", "subject": s}} for s in subjects]

    assert _order_breaks(flow_of(pipeline, ordered), sent, results(ordered, ["b1", "a1", "a2"])) == 0
    assert _order_breaks(flow_of(pipeline, ordered), sent, results(ordered, ["a2", "b1", "a1"])) == 1
    assert _order_breaks(flow_of(pipeline, plain), sent, results(plain, ["a2", "b1", "a1"])) == 0  # unordered: no claim
    ledger = Ledger(processed_once=3)
    assert ledger.balanced(3)
    ledger.out_of_order = 1
    assert not ledger.balanced(3)


def test_a_kafka_consumers_results_are_checked_per_partition_where_each_record_landed():
    from inferbus.channel_feeds import ChannelFeeds
    from inferbus.model.declarations import Pipeline
    from inferbus.model.ordering import order_breaks_by
    from tests.declared import PIPELINE

    consumer = PIPELINE.consumers[0]
    feeds = ChannelFeeds(pipeline=None, declarations=Pipeline())  # type: ignore[arg-type] - only what was written is read
    # as the producer's delivery reports said: (partition, offset), an event written twice counts where first written
    feeds.placed[consumer.name] = {"e1": [(0, 0)], "e2": [(1, 0)], "e3": [(0, 1), (0, 5)], "e4": [(1, 1)]}
    order = feeds.partition_order(consumer)
    assert order == [("e1", "0"), ("e3", "0"), ("e2", "1"), ("e4", "1")]
    assert order_breaks_by(order, ["e2", "e1", "e4", "e3"]) == 0  # partitions interleave freely
    assert order_breaks_by(order, ["e3", "e1", "e2", "e4"]) == 1  # e3 came out ahead of e1, its partition's earlier
    assert order_breaks_by(order, ["e1", "e3", "e3", "e1", "e2", "e4"]) == 0  # a repeated result is not a break
