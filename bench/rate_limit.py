"""Does a consumer's token bucket hold its rate under load, and lose nothing?

A queue (moto's SQS, with real visibility timeouts and a DLQ after ``--max-receive-count`` receives, the
kit's default 3 unless given) holds N events, all sent at once: a backlog far over the rate. K concurrent
"invocations" each loop as Lambda's poller would: receive a batch, run the consumer's real ``handle`` (the
bucket, the backoff, the claims, publishing to a counter), delete what it did not report failed. Records over
the rate are hidden for their backoff by the consumer itself and come back later. The bucket is in Redis (a
local server, ``INFERBUS_REDIS_URL``, default ``redis://127.0.0.1:6379``) or in a moto DynamoDB table.

The backoff is the record's place in the bucket's line (``TokenBucket.line_up``, the kit's); with
``--backoff both`` the same load also runs with the estimate the kit used before (``backoff_s``: the time
for the bucket to hold this batch's records alone), as the baseline this run measures the line against.

Printed per store and backoff: the rate held (results per second from the first result to the last)
against the limit and against the bound its bucket allows (rate + burst / seconds), the rate the same
invocations reach with no limit (measured in this run), and the ledger counted from the queues: events
published once, twice, lost, in the DLQ; deliveries sent back; records let through on their last receive.

Usage::

    .venv/bin/python bench/rate_limit.py [--events 400] [--rate 20] [--invocations 6] [--store redis|dynamodb|both]
                                         [--max-receive-count 3] [--backoff line|estimate|both]
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections import Counter
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from inferbus_lambda.claims import DynamoDBClaimStore, RedisClaimStore
from inferbus_lambda.claims.redis import connect
from inferbus_lambda.consumer import InferenceConsumer, expect_type
from inferbus_lambda.contracts import ImageSubmitted, from_put_events_entry, new_event
from inferbus_lambda.rate_limit import TokenBucket, backoff_s, burst, token_bucket
from inferbus_lambda.sources import SqsRecordSource
from moto import mock_aws



class EstimatedBackoff:
    """The baseline: the kit's bucket, but records sent back hidden for the estimate it used before the line
    (the time for the bucket to hold this batch's records alone, whatever else waits)."""

    def __init__(self, bucket: TokenBucket) -> None:
        self.bucket, self.rate = bucket, bucket.rate

    def take(self, wanted: int, *, now_ms: int | None = None) -> int:
        return self.bucket.take(wanted, now_ms=now_ms)

    def charge(self, count: int, *, now_ms: int | None = None) -> None:
        self.bucket.charge(count, now_ms=now_ms)

    def line_up(self, count: int, *, now_ms: int | None = None) -> int:
        return backoff_s(count, self.rate)


class Metrics:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def add_metric(self, *, name: str, value: float, **_: Any) -> None:
        with self.lock:
            self.counts[name] += int(value)


class OneCallAtATime:
    """moto's DynamoDB and SQS are not thread-safe (AWS's are): one call at a time, each still its own request, so a
    bucket's read and its conditional write interleave with other invocations' as they would in AWS."""

    def __init__(self, client: Any) -> None:
        self.client, self.lock = client, threading.Lock()

    def __getattr__(self, name: str) -> Any:
        call = getattr(self.client, name)

        def locked(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                return call(*args, **kwargs)

        return locked


class Context:
    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


def run(store: str, *, events: int, rate: float | None, invocations: int, max_receive_count: int,
        backoff: str = "line") -> dict[str, Any]:
    with mock_aws():
        sqs = OneCallAtATime(boto3.client("sqs", region_name="us-east-1"))  # moto's SQS is not thread-safe either
        dynamodb = OneCallAtATime(boto3.client("dynamodb", region_name="us-east-1"))
        dynamodb.create_table(TableName="claims", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                              AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                              BillingMode="PAY_PER_REQUEST")
        dead_url = sqs.create_queue(QueueName="dead")["QueueUrl"]
        dead_arn = sqs.get_queue_attributes(QueueUrl=dead_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        url = sqs.create_queue(QueueName="work", Attributes={"VisibilityTimeout": "30", "RedrivePolicy": json.dumps(
            {"deadLetterTargetArn": dead_arn, "maxReceiveCount": max_receive_count})})["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        for start in range(0, events, 10):
            entries = []
            for i in range(start, min(start + 10, events)):
                event = new_event(ImageSubmitted(pixels=[i % 17] * 64), source="bench", event_id=f"e{i}")
                entries.append({"Id": str(i - start), "MessageBody": json.dumps(
                    {"source": event.source, "detail-type": event.type, "detail": event.model_dump(mode="json")})})
            sqs.send_message_batch(QueueUrl=url, Entries=entries)
        redis_url = os.environ.get("INFERBUS_REDIS_URL", "redis://127.0.0.1:6379").removeprefix("redis://")
        if store == "redis":
            redis_client = connect(redis_url)
            for key in redis_client.scan_iter(match="inferbus:{bench}*"):  # the bucket and its line too
                redis_client.delete(key)
        published: list[tuple[float, str]] = []
        lock = threading.Lock()
        metrics = Metrics()
        idle = threading.Event()

        def publish(entries: list[dict[str, Any]]) -> list[Any]:
            with lock:
                published.extend((time.monotonic(), str(from_put_events_entry(e).subject)) for e in entries)
            return []

        def invocation() -> None:
            claims = (RedisClaimStore(connect(redis_url), scope="bench", expires_after_seconds=3600) if store == "redis"
                      else DynamoDBClaimStore("claims", scope="bench", expires_after_seconds=3600, client=dynamodb))
            bucket = token_bucket(claims, rate=rate, scope="bench")
            consumer = InferenceConsumer(
                source=SqsRecordSource(consumer="bench", dead_letter_queue_url=dead_url, max_receive_count=max_receive_count,
                                       sqs=lambda: sqs),
                parse=expect_type("ImageSubmitted"), infer=lambda batch: [e.data for e in batch], claims=claims,
                publish=publish, result_source="inferbus.bench", bus_name="bus", metrics=metrics,
                logger=Logger(service="bench", level="ERROR"),
                rate_limit=EstimatedBackoff(bucket) if bucket is not None and backoff == "estimate" else bucket)  # type: ignore[arg-type]
            while not idle.is_set():
                messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"],
                                               WaitTimeSeconds=0).get("Messages", [])
                if not messages:
                    time.sleep(0.05)
                    continue
                event = {"Records": [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                                      "attributes": m["Attributes"], "eventSourceARN": arn} for m in messages]}
                failed = {item["itemIdentifier"] for item in consumer.handle(event, Context())["batchItemFailures"]}
                done = [m for m in messages if m["MessageId"] not in failed]
                for start in range(0, len(done), 10):
                    sqs.delete_message_batch(QueueUrl=url, Entries=[
                        {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(done[start:start + 10])])

        threads = [threading.Thread(target=invocation) for _ in range(invocations)]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        while (len({subject for _, subject in published}) + _depth(sqs, dead_url) < events
               and time.monotonic() - began < 600):
            time.sleep(0.1)
        idle.set()
        for thread in threads:
            thread.join()
        times = sorted(t for t, _ in published)
        span = (times[-1] - times[0]) if len(times) > 1 else 0.0
        counts = Counter(subject for _, subject in published)
        dead = _depth(sqs, dead_url)
        return {"store": store, "rate": rate, "published": len(published), "distinct": len(counts),
                "twice": sum(1 for c in counts.values() if c > 1), "lost": events - len(counts) - dead, "dead": dead,
                "held": (len(published) - 1) / span if span else float("inf"), "seconds": time.monotonic() - began,
                "bound": rate + burst(rate) / span if rate and span else float("inf"),
                "over_rate": metrics.counts["RecordsOverRate"], "let_through": metrics.counts["RecordsOverRateLetThrough"]}


def _depth(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages",
                                                                        "ApproximateNumberOfMessagesNotVisible"])
    return sum(int(value) for value in attributes["Attributes"].values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--invocations", type=int, default=6)
    parser.add_argument("--store", choices=("redis", "dynamodb", "both"), default="both")
    parser.add_argument("--max-receive-count", type=int, default=3, help="the queue's (default 3, the kit's default)")
    parser.add_argument("--backoff", choices=("line", "estimate", "both"), default="both")
    args = parser.parse_args()
    stores = ("redis", "dynamodb") if args.store == "both" else (args.store,)
    backoffs = ("line", "estimate") if args.backoff == "both" else (args.backoff,)
    common = dict(events=args.events, invocations=args.invocations, max_receive_count=args.max_receive_count)
    baseline = run(stores[0], rate=None, **common)
    print(f"no limit ({stores[0]} claims): {baseline['held']:.0f} events/s with {args.invocations} invocations "
          f"(the load offered), {baseline['lost']} lost, {baseline['twice']} twice, {baseline['dead']} in the DLQ")
    for store in stores:
        for backoff in backoffs:
            result = run(store, rate=args.rate, backoff=backoff, **common)
            print(f"limit {args.rate:g}/s, bucket in {store}, backoff {backoff}: held {result['held']:.1f} events/s = "
                  f"{result['held'] / args.rate:.2f} x the limit (bound {result['bound']:.1f}/s: rate + burst / seconds; "
                  f"{baseline['held'] / result['held']:.1f}x below no limit); {result['distinct']} of {args.events} "
                  f"published once, {result['twice']} twice, {result['lost']} lost, {result['dead']} in the DLQ "
                  f"(maxReceiveCount {args.max_receive_count}); {result['over_rate']} deliveries sent back with a "
                  f"backoff, {result['let_through']} let through on their last receive; {result['seconds']:.1f} s")


if __name__ == "__main__":
    main()
