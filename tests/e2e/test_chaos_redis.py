"""Chaos with the claims in Redis: the embedded runtime serves the template's ElastiCache cache from a real
redis-server, and the same ledger balances as on DynamoDB, under the same faults (connections dropped where
DynamoDB throttles). Needs a redis-server (tests/redis_server.py starts one; CI fails without it)."""

from __future__ import annotations

import pytest

from inferbus.chaos import ChaosError, FaultRates, run_chaos
from inferbus.model.declarations import Consumer
from tests.declared import PIPELINE
from tests.redis_server import free_port, redis_endpoint  # noqa: F401 - the server fixture

CONSUMER = next(c for c in PIPELINE.consumers if not c.ordered)


@pytest.fixture
def local_redis(redis_endpoint, monkeypatch):
    monkeypatch.setenv("INFERBUS_REDIS_URL", f"redis://{redis_endpoint}")
    return redis_endpoint


def test_a_consumers_ledger_balances_with_its_claims_in_redis(local_redis):
    rates = FaultRates(claim_throttle_rate=0.3, complete_throttle_rate=0.3)
    report = run_chaos(events=60, rates=rates, flow=CONSUMER.name, seed=3, claims_stores=("redis",))
    (flow,) = report.flows.values()
    assert flow.claims_store == "redis" and flow.balanced, flow.ledger
    final = flow.after_redrive or flow.ledger
    # every input processed; a repeat only where a completion was refused or a crash came first (recorded)
    assert final.lost == 0 and final.repeats_unexplained == 0 and final.processed_once + final.processed_twice == 60
    bill = flow.claims_bill
    assert bill is not None and bill.store == "redis" and bill.requests["evalsha"] > 0 and bill.units["ecpus"] > 0


def test_both_stores_run_side_by_side_and_an_unknown_store_or_a_missing_server_is_one_line(local_redis, monkeypatch):
    report = run_chaos(events=20, rates=FaultRates.only(duplicate_rate=0.3), flow=CONSUMER.name,
                       claims_stores=("dynamodb", "redis"))
    assert set(report.flows) == {f"{CONSUMER.name} (dynamodb)", f"{CONSUMER.name} (redis)"} and report.balanced
    assert {flow.claims_bill.store for flow in report.flows.values()} == {"dynamodb", "redis"}
    with pytest.raises(ChaosError, match="claims store memcached: choose from dynamodb, redis"):
        run_chaos(events=1, flow=CONSUMER.name, claims_stores=("memcached",))
    monkeypatch.setenv("INFERBUS_REDIS_URL", f"redis://127.0.0.1:{free_port()}")
    with pytest.raises(ChaosError, match="no Redis answers at .* start one \\(redis-server --daemonize yes"):
        run_chaos(events=1, flow=CONSUMER.name, claims_stores=("redis",))
    assert isinstance(CONSUMER, Consumer)
