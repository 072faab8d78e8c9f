"""Exactly-once claims on a real Redis: the same answers as DynamoDB's, atomic under concurrent invocations,
a whole batch in one round trip, and an unreachable server answered per record, never by failing the batch.

Needs a redis-server (tests/redis_server.py starts one, or skips naming the command; CI fails instead)."""

from __future__ import annotations

import threading

from inferbus_lambda.claims import ClaimStatus, InMemoryClaimStore, RedisClaimStore, claim_key, claim_store
from inferbus_lambda.claims.redis import connect
from inferbus_lambda.contracts import ImageSubmitted, new_event
from inferbus_lambda.environment import ClaimsEnvironment

from tests.functional.test_claims import dynamodb, make_claims  # noqa: F401 - the moto table fixture
from tests.redis_server import free_port, redis_client, redis_endpoint  # noqa: F401 - fixtures


def images(count: int, start: int = 0):
    return [new_event(ImageSubmitted(pixels=[(i + start) % 17] * 64), source="claims.test", event_id=f"img-{i + start}")
            for i in range(count)]


def redis_store(client, scope: str = "image-classifier") -> RedisClaimStore:
    return RedisClaimStore(client, scope=scope, expires_after_seconds=3600)


def values(statuses) -> list[str]:
    return [status.value for status in statuses]


def test_redis_answers_as_dynamodb_and_memory_do(redis_client, dynamodb):
    """One script of claims, completions, releases, conflicts and accepts: the same statuses on all three stores."""

    def script(claims) -> list[str]:
        done, held, released = images(3)
        forged = new_event(ImageSubmitted(pixels=[16] * 64), source="claims.test", event_id=done.id)
        answers = values(claims.claim([done, held, released, done], remaining_ms=30_000))
        claims.complete([(done, {"result_id": "r"})])
        claims.release([released])
        answers += values(claims.claim([done, held, released], remaining_ms=30_000))
        answers += values(claims.claim([forged], remaining_ms=30_000))
        answers.append(claims.accept_once(images(1, start=9)[0], owner="x").value)
        answers.append(claims.accept_once(images(1, start=9)[0], owner="y").value)
        answers.append(claims.accept_once(held, owner="x").value)  # a consumer holds it: the workflow waits
        answers += values(claims.claim([forged.model_copy(update={"source": "another.producer"})], remaining_ms=30_000))
        return answers

    memory = script(InMemoryClaimStore(scope="image-classifier", expires_after_seconds=3600))
    assert script(redis_store(redis_client)) == memory == script(make_claims(dynamodb))
    assert memory.count("claimed") >= 5 and {"conflict", "already_done", "in_progress"} <= set(memory)


def test_a_batch_is_one_round_trip_whatever_its_size_and_keys_expire_with_their_claims(redis_client):
    store = redis_store(redis_client)
    events = images(250)
    assert values(store.claim(events, remaining_ms=30_000)) == ["claimed"] * 250
    assert store.requests == {"evalsha": 1}
    assert store.complete([(event, {"result_id": f"r-{event.id}"}) for event in events[:100]]) == []
    assert store.release(events[100:]) == []
    assert store.requests == {"evalsha": 1, "pipeline": 1, "del": 1}
    # Redis deletes a claim when it lapses (the key's expiry is the claim's), as DynamoDB's TTL does, days late.
    ttl = redis_client.ttl(store.key(claim_key(events[0].source, events[0].id)))
    assert 3590 <= ttl <= 3600
    assert redis_client.dbsize() == 100


def test_concurrent_invocations_claim_each_event_exactly_once(redis_endpoint):
    """Eight invocations race on overlapping batches: every event is claimed by exactly one of them."""
    events = images(400)
    client = connect(redis_endpoint)
    client.flushdb()
    winners: list[list[str]] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def invocation(n: int) -> None:
        store = redis_store(connect(redis_endpoint), scope="race")
        batch = events[(n % 4) * 50:] + events[: (n % 4) * 50]  # every invocation sees every event, in another order
        start.wait()
        statuses = store.claim(batch, remaining_ms=30_000)
        with lock:
            winners.append([event.id for event, status in zip(batch, statuses, strict=True) if status is ClaimStatus.CLAIMED])

    threads = [threading.Thread(target=invocation, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = [event_id for won in winners for event_id in won]
    assert sorted(claimed) == sorted(event.id for event in events)  # each once, none twice, none lost
    client.flushdb()


def test_an_unreachable_server_fails_the_records_not_the_batch():
    store = redis_store(connect(f"127.0.0.1:{free_port()}"))  # nothing listens there
    events = images(3)
    assert values(store.claim(events, remaining_ms=30_000)) == ["unavailable"] * 3
    assert store.complete([(events[0], {"result_id": "r"})]) == [claim_key(events[0].source, events[0].id)]
    assert store.release(events[1:]) == [claim_key(e.source, e.id) for e in events[1:]]


def test_the_environment_chooses_redis_and_one_client_serves_every_scope(redis_endpoint):
    environment = ClaimsEnvironment.from_environ({
        "POWERTOOLS_SERVICE_NAME": "image-classifier", "POWERTOOLS_METRICS_NAMESPACE": "Inferbus",
        "IDEMPOTENCY_TABLE_NAME": "unused", "IDEMPOTENCY_TTL_SECONDS": "60", "CLAIM_STORE": "redis",
        "REDIS_ENDPOINT": redis_endpoint})
    first = claim_store(environment, scope="a", client=object())  # a DynamoDB client is not ours: it makes its own
    second = claim_store(environment, scope="b")
    assert isinstance(first, RedisClaimStore) and first.client is second.client
    assert first.expires_after_seconds == 60
    (event,) = images(1)
    assert values(first.claim([event], remaining_ms=1_000) + second.claim([event], remaining_ms=1_000)) == ["claimed"] * 2
    first.client.flushdb()


def test_iam_auth_signs_a_connect_request_for_the_cache_and_reuses_it():
    """ElastiCache IAM auth: the password is a presigned connect request for the user on the serverless cache."""
    from inferbus_lambda.claims.redis import IamAuthToken

    token = IamAuthToken(user_id="inferbus-claims", cache_name="my-cache", region="us-east-1")
    user, password = token.get_credentials()
    assert user == "inferbus-claims"
    assert password.startswith("my-cache/?Action=connect&User=inferbus-claims&ResourceType=ServerlessCache")
    assert "X-Amz-Signature=" in password and "X-Amz-Expires=900" in password
    assert token.get_credentials()[1] == password  # reused until it is 10 minutes old


def test_a_dropped_connection_is_retried_and_only_the_last_failure_fails_the_records(redis_client):
    """The chaos fault (a connection lost mid-request) on the claim script: retried like a DynamoDB throttle."""
    from inferbus.chaos.faults import UnreachableRedis

    drops = iter([True, False, True, True, True])  # first claim: dropped once; second: dropped every time
    store = RedisClaimStore(redis_client, scope="image-classifier", expires_after_seconds=3600, sleep=lambda _: None)
    store.client = UnreachableRedis(redis_client, claim_sha=store.claim_sha, claim_rate=lambda: 1.0,
                                    complete_rate=lambda: 0.0, draws=lambda rate: next(drops))
    first, second = images(2)
    assert values(store.claim([first], remaining_ms=30_000)) == ["claimed"]
    assert store.requests == {"evalsha": 2}
    assert values(store.claim([second], remaining_ms=30_000)) == ["unavailable"]
    assert store.requests == {"evalsha": 5}  # three attempts, then its record is redelivered later
