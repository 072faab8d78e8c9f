"""What a chaos run's claims cost, per store: requests made, the units each store bills, and dollars.

DynamoDB (on demand) bills request units per item: a transactional write 2 write units per item, a batch
write 1 per item, a batch read half a read unit per key (eventually consistent, items under 1 KB; a
throttled request bills nothing). ElastiCache Serverless bills ECPUs: one per key read or written for
small values (``RedisClaimStore.ecpus``), plus a stored-data minimum that DynamoDB has no equivalent of.

Prices: us-east-1 list prices in December 2025 (check the pricing pages for your Region):

==========================================  ==============
DynamoDB on-demand write request unit        $0.625 / million
DynamoDB on-demand read request unit         $0.125 / million
ElastiCache Serverless Valkey ECPU           $0.0023 / million
ElastiCache Serverless Valkey data stored    $0.084 / GB-hour, at least 100 MB: about $6.13 / month
Interface VPC endpoint (3 endpoints x 2 AZs) $0.01 / hour each: about $43.80 / month
==========================================  ==============
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FIXED_MONTHLY_USD", "MeteredDynamoDB", "StoreBill", "bill_of"]

DYNAMODB_WRITE_UNIT_USD = 0.625e-6
DYNAMODB_READ_UNIT_USD = 0.125e-6
VALKEY_ECPU_USD = 0.0023e-6
HOURS_PER_MONTH = 730
# What each store costs a month before its first request (the redis store's minimum storage and its VPC endpoints).
FIXED_MONTHLY_USD = {"dynamodb": 0.0, "redis": round(0.084 * 0.1 * HOURS_PER_MONTH + 6 * 0.01 * HOURS_PER_MONTH, 2)}


class MeteredDynamoDB:
    """A DynamoDB client that counts the request units each claims call bills (what goes through: put it
    inside any throttling wrapper)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.write_units = 0.0
        self.read_units = 0.0

    def transact_write_items(self, **request: Any) -> Any:
        self.write_units += 2 * len(request["TransactItems"])  # billed when cancelled too
        return self.client.transact_write_items(**request)

    def batch_write_item(self, **request: Any) -> Any:
        response = self.client.batch_write_item(**request)
        sent = sum(len(items) for items in request["RequestItems"].values())
        unprocessed = sum(len(items) for items in response.get("UnprocessedItems", {}).values())
        self.write_units += sent - unprocessed
        return response

    def batch_get_item(self, **request: Any) -> Any:
        self.read_units += 0.5 * sum(len(table["Keys"]) for table in request["RequestItems"].values())
        return self.client.batch_get_item(**request)

    def put_item(self, **request: Any) -> Any:
        self.write_units += 1
        return self.client.put_item(**request)

    def get_item(self, **request: Any) -> Any:
        self.read_units += 0.5
        return self.client.get_item(**request)

    def update_item(self, **request: Any) -> Any:
        self.write_units += 1
        return self.client.update_item(**request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


@dataclass
class StoreBill:
    """One run's claims traffic on one store."""

    store: str
    requests: dict[str, int] = field(default_factory=dict)
    units: dict[str, float] = field(default_factory=dict)  # write_units/read_units, or ecpus
    usd: float = 0.0

    def add(self, other: StoreBill) -> None:
        for name, count in other.requests.items():
            self.requests[name] = self.requests.get(name, 0) + count
        for name, amount in other.units.items():
            self.units[name] = self.units.get(name, 0.0) + amount
        self.usd += other.usd

    def per_million(self, events: int) -> float:
        """Dollars per million input events at this run's rate of claims traffic."""
        return self.usd * 1_000_000 / max(events, 1)


def bill_of(store: Any, metered: MeteredDynamoDB | None = None) -> StoreBill:
    """What ``store`` (a DynamoDB or Redis claims store) was asked, in requests, units and dollars."""
    from inferbus_lambda.claims import DynamoDBClaimStore, RedisClaimStore

    if isinstance(store, RedisClaimStore):
        return StoreBill("redis", dict(store.requests), {"ecpus": float(store.ecpus)}, store.ecpus * VALKEY_ECPU_USD)
    if isinstance(store, DynamoDBClaimStore):
        writes = metered.write_units if metered else 0.0
        reads = metered.read_units if metered else 0.0
        return StoreBill("dynamodb", dict(store.requests), {"write_units": writes, "read_units": reads},
                         writes * DYNAMODB_WRITE_UNIT_USD + reads * DYNAMODB_READ_UNIT_USD)
    return StoreBill(type(store).__name__)
