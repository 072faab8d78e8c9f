"""Does a consumer's token bucket hold its rate under load, and lose nothing?

A queue (moto's SQS, with real visibility timeouts) holds N events; K concurrent "invocations" each loop
as Lambda's poller would: receive a batch, run the consumer's real ``handle`` (the bucket, the backoff, the
claims, publishing to a counter), delete what it did not report failed. Records over the rate are hidden
for their backoff by the consumer itself and come back later. The bucket is in Redis (a local server,
``INFERBUS_REDIS_URL``, default ``redis://127.0.0.1:6379``) or in a moto DynamoDB table.

Printed per store: the rate held (results per second from the first result to the last) against the limit,
the rate the same invocations reach with no limit (the baseline, measured in this run), and the ledger:
every event published exactly once, none in a DLQ.

Usage::

    .venv/bin/python bench/rate_limit.py [--events 400] [--rate 20] [--invocations 6] [--store redis|dynamodb|both]
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
from inferbus_lambda.rate_limit import token_bucket
from inferbus_lambda.sources import SqsRecordSource
from moto import mock_aws

MAX_RECEIVE_COUNT = 10


class Metrics:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def add_metric(self, *, name: str, value: float, **_: Any) -> None:
        with self.lock:
            self.counts[name] += int(value)


class OneCallAtATime:
    """moto's DynamoDB is not thread-safe (DynamoDB is): one call at a time, each still its own request, so a
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


def run(store: str, *, events: int, rate: float | None, invocations: int) -> dict[str, Any]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        dynamodb = OneCallAtATime(boto3.client("dynamodb", region_name="us-east-1"))
        dynamodb.create_table(TableName="claims", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                              AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                              BillingMode="PAY_PER_REQUEST")
        url = sqs.create_queue(QueueName="work", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
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
            for key in redis_client.scan_iter(match="inferbus:{bench}*"):
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
            consumer = InferenceConsumer(
                source=SqsRecordSource(consumer="bench", max_receive_count=MAX_RECEIVE_COUNT, sqs=lambda: sqs),
                parse=expect_type("ImageSubmitted"), infer=lambda batch: [e.data for e in batch], claims=claims,
                publish=publish, result_source="inferbus.bench", bus_name="bus", metrics=metrics,
                logger=Logger(service="bench", level="ERROR"),
                rate_limit=token_bucket(claims, rate=rate, scope="bench"))
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
        while len({subject for _, subject in published}) < events and time.monotonic() - began < 600:
            time.sleep(0.1)
        idle.set()
        for thread in threads:
            thread.join()
        times = sorted(t for t, _ in published)
        span = (times[-1] - times[0]) if len(times) > 1 else 0.0
        counts = Counter(subject for _, subject in published)
        return {"store": store, "rate": rate, "published": len(published), "distinct": len(counts),
                "twice": sum(1 for c in counts.values() if c > 1), "lost": events - len(counts),
                "held": (len(published) - 1) / span if span else float("inf"), "seconds": time.monotonic() - began,
                "over_rate": metrics.counts["RecordsOverRate"], "let_through": metrics.counts["RecordsOverRateLetThrough"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--invocations", type=int, default=6)
    parser.add_argument("--store", choices=("redis", "dynamodb", "both"), default="both")
    args = parser.parse_args()
    stores = ("redis", "dynamodb") if args.store == "both" else (args.store,)
    baseline = run(stores[0], events=args.events, rate=None, invocations=args.invocations)
    print(f"no limit ({stores[0]} claims): {baseline['held']:.0f} events/s with {args.invocations} invocations "
          f"(the load offered), {baseline['lost']} lost, {baseline['twice']} twice")
    for store in stores:
        result = run(store, events=args.events, rate=args.rate, invocations=args.invocations)
        print(f"limit {args.rate:g}/s, bucket in {store}: held {result['held']:.1f} events/s = "
              f"{result['held'] / args.rate:.2f} x the limit ({baseline['held'] / result['held']:.1f}x below no limit); "
              f"{result['distinct']} of {args.events} published once, {result['twice']} twice, {result['lost']} lost, "
              f"0 to a DLQ; {result['over_rate']} deliveries sent back with a backoff, {result['let_through']} let "
              f"through on their last receive; {result['seconds']:.1f} s")


if __name__ == "__main__":
    main()
