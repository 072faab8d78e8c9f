"""The exactly-once policy of ClaimStore, on the in-memory store and on a real Redis: the same rules as DynamoDB's.

The Redis cases skip without a server (tests/redis_server.py names the command), and fail in CI.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
from inferbus_lambda.claims import (
    ClaimRecord,
    ClaimState,
    ClaimStatus,
    ClaimStore,
    InMemoryClaimStore,
    claim_key,
    claim_store,
    claimable,
    data_hash,
    decide,
)
from inferbus_lambda.contracts import ImageClassified, ImageSubmitted, ModelRef, new_event
from inferbus_lambda.environment import ClaimsEnvironment
from inferbus_lambda.errors import ConfigurationError

from tests.redis_server import redis_client, redis_endpoint  # noqa: F401 - fixtures


def images(count: int, start: int = 0):
    return [new_event(ImageSubmitted(pixels=[(i + start) % 17] * 64), source="policy.test", event_id=f"img-{i + start}")
            for i in range(count)]


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> ClaimStore:
    if request.param == "redis":
        from inferbus_lambda.claims import RedisClaimStore

        return RedisClaimStore(request.getfixturevalue("redis_client"), scope="image-classifier", expires_after_seconds=3600)
    return InMemoryClaimStore(scope="image-classifier", expires_after_seconds=3600)


def stored(store: ClaimStore, key: str) -> ClaimRecord | None:
    """What ``store`` holds under ``key``, read as the store lays it out."""
    if isinstance(store, InMemoryClaimStore):
        return store.records.get(key)
    value = store.client.get(store.key(key))
    return None if value is None else store.record(key, value)


def values(statuses: list[ClaimStatus]) -> list[str]:
    return [status.value for status in statuses]


def test_claimed_then_completed_is_a_duplicate_and_released_is_claimable_again(store):
    done, failed = images(2)
    assert values(store.claim([done, failed], remaining_ms=30_000)) == ["claimed", "claimed"]
    assert store.complete([(done, {"result_id": "r-1"})]) == []
    assert store.release([failed]) == []
    assert values(store.claim([done, failed], remaining_ms=30_000)) == ["already_done", "claimed"]
    assert stored(store, claim_key(done.source, done.id)).result == {"result_id": "r-1"}


def test_a_second_copy_in_one_batch_is_held_by_the_first_and_other_data_is_a_conflict(store):
    (event,) = images(1)
    forged = new_event(ImageSubmitted(pixels=[9] * 64), source="policy.test", event_id=event.id)
    assert values(store.claim([event, event, forged], remaining_ms=30_000)) == ["claimed", "in_progress", "conflict"]
    assert values(store.claim([forged], remaining_ms=30_000)) == ["conflict"]  # the stored claim's data differs


def test_an_in_progress_claim_holds_until_its_holders_deadline(store):
    held, crashed = images(2)
    store.claim([held], remaining_ms=30_000)
    store.claim([crashed], remaining_ms=0)  # its holder's deadline has passed
    time.sleep(0.002)
    assert values(store.claim([held, crashed], remaining_ms=30_000)) == ["in_progress", "claimed"]


def test_an_expired_completed_claim_no_longer_suppresses_the_event(store):
    (event,) = images(1)
    store.claim([event], remaining_ms=30_000)
    store.complete([(event, {"result_id": "r"})])
    key = claim_key(event.source, event.id)
    assert store.put_completed([dataclasses.replace(stored(store, key), expires_at_s=int(time.time()) - 1)]) == []
    assert values(store.claim([event], remaining_ms=30_000)) == ["claimed"]


def test_a_workflow_owns_an_event_once_and_its_own_retry_is_let_through(store):
    (event,) = images(1)
    assert store.accept_once(event, owner="execution-1") is ClaimStatus.CLAIMED
    assert store.accept_once(event, owner="execution-1") is ClaimStatus.CLAIMED
    assert store.accept_once(event, owner="execution-2") is ClaimStatus.ALREADY_DONE
    forged = new_event(ImageSubmitted(pixels=[9] * 64), source="policy.test", event_id=event.id)
    assert store.accept_once(forged, owner="execution-3") is ClaimStatus.CONFLICT
    assert stored(store, claim_key(event.source, event.id)).state is ClaimState.COMPLETED  # nothing in progress for a crash to strand


def test_a_consumers_in_progress_claim_makes_a_workflow_wait(store):
    (event,) = images(1)
    store.claim([event], remaining_ms=30_000)
    assert store.accept_once(event, owner="execution-1") is ClaimStatus.IN_PROGRESS


def test_end_hold_frees_only_claims_taken_before_the_moment(store):
    before, after = images(2)
    store.claim([before], remaining_ms=30_000)
    moment = int(time.time() * 1000) + 1
    time.sleep(0.003)
    store.claim([after], remaining_ms=30_000)
    now = int(time.time() * 1000)
    assert store.end_hold(claim_key(before.source, before.id), claimed_before_ms=moment, now_ms=now)
    assert not store.end_hold(claim_key(after.source, after.id), claimed_before_ms=moment, now_ms=now)
    assert not store.end_hold("never-claimed", claimed_before_ms=moment, now_ms=now)
    assert values(store.claim([before, after], remaining_ms=30_000)) == ["claimed", "in_progress"]


def test_the_policys_predicates():
    now_ms = 1_000_000_000
    held = ClaimRecord("e", ClaimState.IN_PROGRESS, "h", expires_at_s=now_ms // 1000 + 60, held_until_ms=now_ms + 5)
    assert claimable(None, now_ms=now_ms) and not claimable(held, now_ms=now_ms)
    assert claimable(dataclasses.replace(held, held_until_ms=now_ms - 1), now_ms=now_ms)
    done = dataclasses.replace(held, state=ClaimState.COMPLETED, held_until_ms=None)
    assert not claimable(done, now_ms=now_ms)
    assert (decide(done, "h"), decide(done, "other"), decide(held, "h"), decide(None, "h")) == (
        ClaimStatus.ALREADY_DONE, ClaimStatus.CONFLICT, ClaimStatus.IN_PROGRESS, ClaimStatus.IN_PROGRESS)


def test_the_data_hash_tells_other_data_apart_but_not_a_measurement():
    first, second = images(2)
    assert data_hash(first) != data_hash(second.model_copy(update={"id": first.id}))
    scored = new_event(ImageClassified(input_id="img-0", label=3, confidence=0.9, probabilities=[0.1 / 9] * 3 + [0.9]
                                       + [0.1 / 9] * 6, model=ModelRef(name="m", version="1"), inference_ms=4.0,
                                       batch_size=10), source="policy.test", event_id="r-0")
    rescored = scored.model_copy(update={"data": scored.data.model_copy(update={"inference_ms": 9.0, "batch_size": 1})})
    assert data_hash(rescored) == data_hash(scored)  # scored again: the same result, other measurements
    relabelled = scored.model_copy(update={"data": scored.data.model_copy(update={"label": 4})})
    assert data_hash(relabelled) != data_hash(scored)


def test_a_store_is_chosen_by_the_environment_and_an_unknown_one_is_named():
    environment = {"POWERTOOLS_SERVICE_NAME": "image-classifier", "POWERTOOLS_METRICS_NAMESPACE": "Inferbus",
                   "IDEMPOTENCY_TABLE_NAME": "claims", "IDEMPOTENCY_TTL_SECONDS": "60"}
    store = claim_store(ClaimsEnvironment.from_environ(environment), scope="x", client=object())
    assert isinstance(store, ClaimStore) and type(store).__name__ == "DynamoDBClaimStore"
    with pytest.raises(ConfigurationError, match="CLAIM_STORE='memcached' names no claims store; known: dynamodb, redis"):
        claim_store(ClaimsEnvironment.from_environ(environment | {"CLAIM_STORE": "memcached"}), scope="x")
    with pytest.raises(ConfigurationError, match="CLAIM_STORE=redis needs REDIS_ENDPOINT"):
        claim_store(ClaimsEnvironment.from_environ(environment | {"CLAIM_STORE": "redis"}), scope="x")


# -- identity: (source, id), as CloudEvents defines it ----------------------------------------------

def from_source(event, source: str, **data):
    """``event`` as another producer sent it: the same id (and, unless ``data`` says, the same data)."""
    changed = event.data.model_copy(update=data) if data else event.data
    return event.model_copy(update={"source": source, "data": changed})


def test_the_same_id_from_another_source_is_another_event(store):
    (event,) = images(1)
    same_data, other_data = from_source(event, "other.producer"), from_source(event, "third.producer", pixels=[9] * 64)
    store.claim([event], remaining_ms=30_000)
    store.complete([(event, {"result_id": "r"})])
    # Both are new events, claimed in one batch; the first producer's copy is a duplicate, its other data a conflict.
    assert values(store.claim([same_data, other_data, event], remaining_ms=30_000)) == [
        "claimed", "claimed", "already_done"]
    assert values(store.claim([from_source(event, event.source, pixels=[9] * 64)], remaining_ms=30_000)) == ["conflict"]
    assert store.accept_once(from_source(event, "fourth.producer"), owner="execution-9") is ClaimStatus.CLAIMED


def test_a_claim_key_tells_every_source_apart_and_stays_short():
    from inferbus_lambda.contracts.core import IDENTIFIER_MAX_CHARS, is_identifier

    sources = ["a", "a|b", "a#b", "é" * 256, "x" * 256, "inferbus.cli", "inferbus.cli "]
    keys = {claim_key(source, event_id) for source in sources for event_id in ("img-1", "img-1#a", "img")}
    assert len(keys) == len(sources) * 3
    assert max(len(key.encode()) for key in keys) <= IDENTIFIER_MAX_CHARS + 33  # whatever the source's length
    assert not any(is_identifier(key) for key in keys)  # no key is ever a bare id: the old keys' form
