"""A state table on moto: seeded in batches of 25, read in batches of 100 through the per-container cache."""

from __future__ import annotations

from decimal import Decimal

import boto3
import pytest
from inferbus_lambda.errors import ConfigurationError, TransientError
from inferbus_lambda.state import StateTableReader, state_tables
from moto import mock_aws

from inferbus.state_seed import seed_table

TABLE = "profiles"


@pytest.fixture
def dynamodb():
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(TableName=TABLE, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
        yield client


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_seeded_items_read_back_as_plain_values_and_absent_ids_as_none(dynamodb):
    items = [{"id": f"c-{n}", "age": n, "score": Decimal("0.25"), "history": [n, n + 1]} for n in range(130)]
    assert seed_table(dynamodb, TABLE, items) == 130  # six BatchWriteItem requests of at most 25
    reader = StateTableReader(dynamodb, TABLE, cache_s=60)
    found = reader.get_many([f"c-{n}" for n in range(130)] + ["nobody"])
    assert found["c-129"] == {"id": "c-129", "age": 129, "score": 0.25, "history": [129, 130]}
    assert found["nobody"] is None and len(found) == 131
    assert reader.reads == 2  # 131 keys: two BatchGetItem requests of at most 100


def test_the_cache_answers_until_it_expires_also_for_absent_ids(dynamodb):
    seed_table(dynamodb, TABLE, [{"id": "a", "age": 30}])
    clock = Clock()
    reader = StateTableReader(dynamodb, TABLE, cache_s=300, clock=clock)
    assert reader.get("a")["age"] == 30 and reader.get("b") is None
    seed_table(dynamodb, TABLE, [{"id": "a", "age": 31}, {"id": "b", "age": 40}])
    clock.now = 299.0
    assert reader.get_many(["a", "b"]) == {"a": {"id": "a", "age": 30}, "b": None} and reader.reads == 2
    clock.now = 300.0
    assert reader.get_many(["a", "b"]) == {"a": {"id": "a", "age": 31}, "b": {"id": "b", "age": 40}}
    assert reader.reads == 3  # both expired keys in one request


def test_no_cache_reads_every_time(dynamodb):
    seed_table(dynamodb, TABLE, [{"id": "a"}])
    reader = StateTableReader(dynamodb, TABLE, cache_s=0)
    reader.get("a")
    reader.get("a")
    assert reader.reads == 2


class Unprocessing:
    """A DynamoDB that leaves ``times`` answers' keys unprocessed before answering (throttling)."""

    def __init__(self, client, times):
        self.client, self.times = client, times

    def batch_get_item(self, RequestItems):  # noqa: N803 - boto3's name
        if self.times:
            self.times -= 1
            return {"Responses": {}, "UnprocessedKeys": RequestItems}
        return self.client.batch_get_item(RequestItems=RequestItems)


def test_unprocessed_keys_are_asked_again_then_the_batch_is_retried(dynamodb, monkeypatch):
    monkeypatch.setattr("inferbus_lambda.state.time.sleep", lambda s: None)
    seed_table(dynamodb, TABLE, [{"id": "a", "age": 1}])
    assert StateTableReader(Unprocessing(dynamodb, 2), TABLE, cache_s=0).get("a") == {"id": "a", "age": 1}
    with pytest.raises(TransientError, match="left keys unread after 5 attempts"):
        StateTableReader(Unprocessing(dynamodb, 5), TABLE, cache_s=0).get("a")


@pytest.mark.parametrize("variable", ["not json", '{"p": "t"}', '{"p": {"table": "t"}}', "[1]"])
def test_a_malformed_state_tables_variable_stops_the_cold_start_naming_it(variable):
    with pytest.raises(ConfigurationError, match="INFERBUS_STATE_TABLES must be a JSON object"):
        state_tables(variable, "svc")


def test_the_state_tables_variable_reads_as_name_to_table():
    assert state_tables('{"p": {"table": "T1", "cache_s": 5}}', "svc") == {"p": {"table": "T1", "cache_s": 5}}
    assert state_tables(None, "svc") == {}
