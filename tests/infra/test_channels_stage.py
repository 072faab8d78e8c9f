"""The ``channels`` stage (``-c stage=channels``): its own declarations (infra/stages/channels.py) with the claims in
Redis, synthesized once with the cdk-nag gate on and read back. Expectations come from the stage's declarations and
settings, so a consumer the lead adds there (Kafka-, RabbitMQ-fed) is checked the same way.

Slow: one synth of the stage."""

from __future__ import annotations

import pytest
from inferbus_lambda.claims.redis import KEY_PREFIX

from infra.stages import STAGES, stage_pipeline

pytestmark = pytest.mark.slow

STAGE = STAGES["channels"]
DECLARED = stage_pipeline(STAGE)


@pytest.fixture(scope="module")
def channels(tmp_path_factory):
    from inferbus.template import synthesize_stacks

    return synthesize_stacks(context={"stage": "channels"}, outdir=str(tmp_path_factory.mktemp("cdk.channels")))


def of_type(template: dict, kind: str) -> dict:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}


def test_the_stage_synthesizes_its_own_declarations_with_the_claims_in_redis(channels):
    template = channels.flattened()
    assert STAGE.SETTINGS["claims_store"] == "redis" and KEY_PREFIX
    (cache,) = of_type(template, "AWS::ElastiCache::ServerlessCache").values()
    assert cache["Properties"]["ServerlessCacheName"] == "inferbus-channels"
    consumers = {c.name for c in DECLARED.consumers}
    claimers = {name: r for name, r in of_type(template, "AWS::Lambda::Function").items()
                if r["Properties"].get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME") in consumers}
    assert len(claimers) == len(consumers) >= 1
    for function in claimers.values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables["CLAIM_STORE"] == "redis" and {"REDIS_ENDPOINT", "REDIS_USER", "REDIS_CACHE_NAME"} <= set(variables)
        assert len(function["Properties"]["VpcConfig"]["SubnetIds"]) == 2
    # Only the functions that claim are in the VPC: the unrouted check and the ingest endpoint are not.
    in_vpc = [name for name, r in of_type(template, "AWS::Lambda::Function").items() if "VpcConfig" in r["Properties"]]
    assert sorted(in_vpc) == sorted(claimers)


def test_each_declared_channel_is_built_as_declared(channels):
    template = channels.flattened()
    queues = of_type(template, "AWS::SQS::Queue")
    ordered = [c for c in DECLARED.consumers if c.ordered]
    assert ordered, "the stage declares a FIFO consumer"
    fifo = [q for q in queues.values() if q["Properties"].get("FifoQueue")]
    assert len(fifo) >= 4 * len(ordered)  # per FIFO consumer: arrivals + its DLQ, its queue + its DLQ
    assert len(of_type(template, "AWS::Pipes::Pipe")) == len(ordered)


def test_the_claiming_functions_may_connect_and_nothing_else_may(channels):
    template = channels.flattened()
    connects = [s for p in of_type(template, "AWS::IAM::Policy").values()
                for s in p["Properties"]["PolicyDocument"]["Statement"]
                if "elasticache:Connect" in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])]
    assert len(connects) == len(DECLARED.consumers) + bool(DECLARED.workflows)
