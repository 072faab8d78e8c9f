"""A consumer's token bucket: the rate shared by every concurrent invocation (in Redis, in DynamoDB), the records
over it sent back to their queue with a backoff (hidden longer, reported failed), never to the DLQ."""

from __future__ import annotations

import json
import threading
import time

import boto3
import pytest
from aws_lambda_powertools import Logger
from inferbus_lambda.claims import DynamoDBClaimStore, InMemoryClaimStore, RedisClaimStore
from inferbus_lambda.consumer import InferenceConsumer, expect_type
from inferbus_lambda.contracts import ImageSubmitted, from_put_events_entry, new_event
from inferbus_lambda.rate_limit import (
    DynamoDBTokenBucket,
    InMemoryTokenBucket,
    RedisTokenBucket,
    TokenBucket,
    admit,
    backoff_s,
    token_bucket,
)
from inferbus_lambda.sources import SourceRecord, SqsRecordSource
from moto import mock_aws

from inferbus.model.settings import ConsumerSettings, SettingsError
from inferbus.runtime import moto_patches
from tests.functional.test_claims import TABLE, dynamodb  # noqa: F401 - the moto table fixture
from tests.redis_server import redis_client, redis_endpoint  # noqa: F401 - fixtures


def test_a_bucket_refills_at_its_rate_and_holds_one_seconds_worth():
    clock = [0]
    bucket = InMemoryTokenBucket(scope="s", rate=4.0, clock_ms=lambda: clock[0])
    assert [bucket.take(3), bucket.take(3)] == [3, 1]  # a full bucket: 4 tokens
    clock[0] = 500
    assert bucket.take(10) == 2  # half a second: 2 more
    clock[0] = 60_000
    assert bucket.take(10) == 4  # never more than one second's worth, however long it waited
    with pytest.raises(ValueError, match="rate must be more than 0"):
        InMemoryTokenBucket(scope="s", rate=0)


def concurrent_takes(make, *, invocations: int, seconds: float, batch: int) -> tuple[int, float]:
    """``invocations`` threads, each with its own bucket object on one shared bucket, taking ``batch`` at a time."""
    granted = [0] * invocations
    start = threading.Barrier(invocations)

    def invocation(n: int) -> None:
        bucket = make()
        start.wait()
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            granted[n] += bucket.take(batch)
            time.sleep(0.01)

    threads = [threading.Thread(target=invocation, args=(n,)) for n in range(invocations)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(granted), time.monotonic() - began


@pytest.mark.parametrize("store", ["redis", "dynamodb"])
def test_concurrent_invocations_share_one_rate(store, request):
    rate = 50.0
    if store == "redis":
        endpoint = request.getfixturevalue("redis_endpoint")
        from inferbus_lambda.claims.redis import connect

        connect(endpoint).delete("inferbus:{scorer}|token-bucket")
        make = lambda: RedisTokenBucket(connect(endpoint), scope="scorer", rate=rate)  # noqa: E731
    else:
        client = request.getfixturevalue("dynamodb")
        make = lambda: DynamoDBTokenBucket(TABLE, client, scope="scorer", rate=rate)  # noqa: E731
        # Each DynamoDB request is atomic in AWS; plain moto checks a condition and writes in two steps, so two of
        # the six threads can pass one check: with a busy core beside it, 6 of 12 runs granted more than the bound
        # (up to 40 tokens over) on plain moto, none with the runtime's patches, which make each request atomic.
        moto_patches.install()
        request.addfinalizer(moto_patches.uninstall)
    total, elapsed = concurrent_takes(make, invocations=6, seconds=1.5, batch=10)
    # Never more than the burst plus the rate over the time taken, whatever the interleaving of six takers; one
    # batch of slack: the test's clock starts after the bucket's (its first refill is stamped before `elapsed` begins).
    assert 0 < total <= rate * 1 + rate * elapsed + 10


def test_the_bucket_lives_in_the_claims_stores_backend(redis_client, dynamodb):
    redis_store = RedisClaimStore(redis_client, scope="s", expires_after_seconds=60)
    table_store = DynamoDBClaimStore(TABLE, scope="s", expires_after_seconds=60, client=dynamodb)
    assert isinstance(token_bucket(redis_store, rate=5, scope="s"), RedisTokenBucket)
    bucket = token_bucket(table_store, rate=5, scope="s")
    assert isinstance(bucket, DynamoDBTokenBucket) and bucket.take(3) == 3
    # its item never answers as a claim: its key holds '|' after the scope, which no event id does
    assert dynamodb.get_item(TableName=TABLE, Key={"id": {"S": "s#|token-bucket"}})["Item"]["tokens"]["N"] == "2"  # DynamoDB writes 2.0 as 2
    assert token_bucket(table_store, rate=None, scope="s") is None


def test_over_the_rate_a_record_on_its_last_attempt_takes_a_token_first_or_goes_through_unless_its_group_waits():
    batch = [SourceRecord(str(i), "{}", attempt=attempt, group=group)
             for i, (attempt, group) in enumerate([(1, None), (1, None), (3, None), (1, "a"), (3, "a"), (3, "b")])]
    now, later = admit(batch, 1, last_attempt=lambda record: record.attempt >= 3)
    # the token goes to "2" (unordered, on its last attempt), "5" is let through, "4" waits behind "3" of its group
    assert [r.record_id for r in now] == ["2", "5"] and [r.record_id for r in later] == ["0", "1", "3", "4"]
    # with tokens to spare, the rest go in delivery order
    now, later = admit(batch, 3, last_attempt=lambda record: record.attempt >= 3)
    assert [r.record_id for r in now] == ["2", "0", "1", "5"] and [r.record_id for r in later] == ["3", "4"]
    assert admit(batch, 10, last_attempt=lambda record: True) == (batch, [])
    assert (backoff_s(0, 1.0), backoff_s(30, 10.0), backoff_s(5000, 1.0)) == (1, 3, 900)


class Metrics:
    def __init__(self) -> None:
        self.counts: dict[str, float] = {}

    def add_metric(self, *, name: str, value: float, **_: object) -> None:
        self.counts[name] = self.counts.get(name, 0) + value


class Context:
    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


def test_records_over_the_rate_are_hidden_with_a_backoff_and_reported_failed_never_dead_lettered():
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="work", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
        for i in range(6):
            event = new_event(ImageSubmitted(pixels=[i] * 64), source="t", event_id=f"e{i}")
            sqs.send_message(QueueUrl=url, MessageBody=json.dumps(
                {"source": event.source, "detail-type": event.type, "detail": event.model_dump(mode="json")}))
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        event = {"Records": [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                              "attributes": m["Attributes"], "eventSourceARN": arn} for m in messages]}
        published: list[str] = []
        metrics = Metrics()
        consumer = InferenceConsumer(
            source=SqsRecordSource(consumer="t", max_receive_count=5, sqs=lambda: sqs),
            parse=expect_type("ImageSubmitted"), infer=lambda events: [e.data for e in events],
            claims=InMemoryClaimStore(scope="t", expires_after_seconds=60),
            publish=lambda entries: published.extend(from_put_events_entry(e).subject for e in entries) or [],
            result_source="inferbus.t", bus_name="bus", metrics=metrics, logger=Logger(service="t"),
            rate_limit=InMemoryTokenBucket(scope="t", rate=4.0))
        answer = consumer.handle(event, Context())
        failed = [item["itemIdentifier"] for item in answer["batchItemFailures"]]
        assert len(published) == 4 and len(failed) == 2 and metrics.counts["RecordsOverRate"] == 2
        # hidden for the backoff, not back at the queue's 30 s: moto reports them in flight, none visible
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        assert attributes["ApproximateNumberOfMessagesNotVisible"] == "6"


def test_the_rate_is_a_declared_consumer_setting():
    assert ConsumerSettings().max_events_per_second is None
    assert ConsumerSettings(max_events_per_second=0.5).max_events_per_second == 0.5
    with pytest.raises(SettingsError, match=r"max_events_per_second must be in \(0, 100000\]"):
        ConsumerSettings(max_events_per_second=0)


@pytest.mark.parametrize("store", ["memory", "redis", "dynamodb"])
def test_records_sent_back_queue_up_behind_those_sent_back_before(store, request):
    """Each batch sent back waits behind every record sent back before it, at the rate (its backoff is its place in
    the line), and the line is shared by every invocation; once the line is behind, it starts again from now."""
    rate = 10.0
    if store == "redis":
        from inferbus_lambda.claims.redis import connect

        client = connect(request.getfixturevalue("redis_endpoint"))
        client.delete("inferbus:{liner}|token-bucket")
        make = lambda: RedisTokenBucket(client, scope="liner", rate=rate)  # noqa: E731
    elif store == "dynamodb":
        client = request.getfixturevalue("dynamodb")
        make = lambda: DynamoDBTokenBucket(TABLE, client, scope="liner", rate=rate)  # noqa: E731
    else:
        shared = InMemoryTokenBucket(scope="liner", rate=rate)
        make = lambda: shared  # noqa: E731 - one process: one object
    first, second = make(), make()  # two invocations
    now_ms = None if store == "redis" else int(time.time() * 1000)  # Redis lines up by its own clock
    # 25 records (2.5 s at 10/s) sent back, then 10 more behind them (1 s): 3 s, then 4 s (3 if Redis's clock ran on)
    backoffs = [first.line_up(25, now_ms=now_ms), second.line_up(10, now_ms=now_ms)]
    assert backoffs[0] == 3 and backoffs[1] in ((4,) if now_ms else (3, 4))
    assert InMemoryTokenBucket(scope="idle", rate=rate).line_up(5, now_ms=10**12) == 1  # an empty line: from now
    assert make().line_up(10**6) == 900  # never past SQS's limit


@pytest.mark.parametrize("store", ["memory", "redis", "dynamodb"])
def test_records_let_through_without_a_token_are_paid_for_by_the_records_after_them(store, request):
    """A record processed on its last receive without a token puts the bucket in debt: the records after it wait
    until the rate has paid for it, so over a run the rate holds let-through and all."""
    rate = 10.0
    if store == "redis":
        from inferbus_lambda.claims.redis import connect

        client = connect(request.getfixturevalue("redis_endpoint"))
        client.delete("inferbus:{debtor}|token-bucket")
        bucket: TokenBucket = RedisTokenBucket(client, scope="debtor", rate=rate)
    elif store == "dynamodb":
        bucket = DynamoDBTokenBucket(TABLE, request.getfixturevalue("dynamodb"), scope="debtor", rate=rate)
    else:
        bucket = InMemoryTokenBucket(scope="debtor", rate=rate)
    assert bucket.take(10) == 10  # a full bucket, emptied
    bucket.charge(5)  # five more processed anyway: 5 tokens owed, half a second at 10/s
    assert bucket.take(10) == 0  # still owed (Redis and the DynamoDB test clock run on by milliseconds at most)
    time.sleep(0.3)
    assert bucket.take(10) == 0  # 0.3 s refilled 3 of the 5 owed: still below 0, nothing to take
