"""The conditional flow's two recommenders, embedded: each reads the customer's profile from the seeded
state table, answers a whole batch with ONE model run, and says what its answer is based on."""

from __future__ import annotations

import pytest
from inferbus_lambda.contracts import Customer, TransactionApproved, from_eventbridge_event, new_event, to_put_events_entry

from inferbus.local import LocalPipeline
from inferbus.state_seed import REPO_ROOT, read_seed, seed_table
from pipeline.risk_routing import PROFILES
from tests.declared import PIPELINE, RESULT_SOURCES

SEED = read_seed(REPO_ROOT / PROFILES.seed)
WITH_HISTORY = [item for item in SEED if item.get("history")]
WITHOUT_HISTORY = [item for item in SEED if not item.get("history")]
APPROVER = RESULT_SOURCES["auto-approve"]


@pytest.fixture
def pipeline(template):
    with LocalPipeline(template) as running:
        yield running


def approve(pipeline, *customers):
    """Put one TransactionApproved per customer, as the automatic approval would; return the event ids in order."""
    events = [new_event(TransactionApproved(input_id=f"txn-{n}-{c.id}", customer=c, risk_score=0.01, decided_by="auto"),
                        source=APPROVER) for n, c in enumerate(customers)]
    entries = [to_put_events_entry(event, pipeline.bus_name) for event in events]
    assert pipeline.put_events(entries, as_role=pipeline.producer_role(APPROVER)) == []
    pipeline.drain()
    return [event.id for event in events]


def recommended(pipeline):
    """Each Recommended the recommenders published since the last call (the tap is read once), by the id of the
    approval it answers."""
    sources = {RESULT_SOURCES[c.name] for c in PIPELINE.consumers if PROFILES in c.reads}
    return {event.data.input_id: event for event in map(from_eventbridge_event, pipeline.tapped_events())
            if event.source in sources and event.type == "Recommended"}


def test_the_runtime_seeds_every_declared_table_as_it_starts(pipeline):
    assert pipeline.seeded == {table.name: len(read_seed(REPO_ROOT / table.seed))
                               for table in PIPELINE.state_tables if table.seed}


def test_returning_customers_get_unseen_movies_from_their_history_in_one_batch(pipeline):
    customers = [Customer(id=item["id"], segment="returning") for item in WITH_HISTORY]
    ids = approve(pipeline, *customers, Customer(id="customer-nobody-knows", segment="returning"))
    answers = recommended(pipeline)
    for event_id, profile in zip(ids, WITH_HISTORY, strict=False):
        answer = answers[event_id]
        items = [r.item_id for r in answer.data.items]
        assert answer.source == RESULT_SOURCES["returning-customer-recommender"]
        assert (answer.data.basis, answer.data.model.name) == ("history", "recs-ease")
        assert len(set(items)) == len(items) == 10 and not set(items) & set(profile["history"])
        assert [r.score for r in answer.data.items] == sorted((r.score for r in answer.data.items), reverse=True)
    unknown = answers[ids[-1]]
    assert (unknown.data.basis, unknown.data.model.name) == ("popularity", "recs-ease") and len(unknown.data.items) == 10
    function = pipeline.consumer("returning-customer-recommender").function
    assert max(e.data.batch_size for e in answers.values()) > 1 and len(function.invocations) < len(ids)


def test_new_customers_get_their_segments_popular_movies_and_strangers_everyones(pipeline):
    profile = WITHOUT_HISTORY[0]
    ids = approve(pipeline, Customer(id=profile["id"], segment="new"), Customer(id="customer-stranger", segment="new"))
    answers = recommended(pipeline)
    known, stranger = (answers[event_id] for event_id in ids)
    assert known.source == stranger.source == RESULT_SOURCES["new-customer-recommender"]
    assert (known.data.basis, stranger.data.basis) == ("segment", "popularity")
    assert known.data.model.name == stranger.data.model.name == "recs-popular"


def test_a_profile_read_once_is_kept_for_the_container_until_its_cache_expires(pipeline):
    profile = WITH_HISTORY[0]
    customer = Customer(id=profile["id"], segment="returning")
    (first,) = approve(pipeline, customer)
    before = [r.item_id for r in recommended(pipeline)[first].data.items]
    # The store changes under the running consumer: its history now holds what it was just recommended.
    seed_table(pipeline.session.client("dynamodb"), pipeline.state_table_name(PROFILES.name),
               [{**profile, "history": before}])
    (second,) = approve(pipeline, customer)
    # Read afresh, the new history would mask every one of them; the container's cached profile answered.
    assert [r.item_id for r in recommended(pipeline)[second].data.items] == before
