"""ClaimsCache: serverless Valkey with TLS, encryption at rest and IAM auth, reachable only from the functions
given access, in isolated subnets; cdk-nag finds nothing it does not accept with a reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.constructs.claims_cache import ACCESS_STRING, ENDPOINT_SERVICES, REDIS_PORT
from tests.constructs.claims_cache_stack import add_claims_cache
from tests.redis_server import redis_endpoint  # noqa: F401 - the server fixture

ROOT = Path(__file__).resolve().parents[2]


def test_the_cache_is_serverless_valkey_with_iam_auth_in_isolated_subnets(synth):
    template = synth(add_claims_cache)
    (cache,) = template.find_resources("AWS::ElastiCache::ServerlessCache").values()
    assert cache["Properties"]["Engine"] == "valkey" and len(cache["Properties"]["SubnetIds"]) == 2
    (user,) = template.find_resources("AWS::ElastiCache::User").values()
    assert user["Properties"]["AuthenticationMode"] == {"Type": "iam"}
    access = user["Properties"]["AccessString"]
    assert "~inferbus:*" in access and "-@dangerous" in access and "allkeys" not in access and "~*" not in access
    # no internet: no gateway, no NAT, no public subnet
    for kind in ("AWS::EC2::InternetGateway", "AWS::EC2::NatGateway"):
        assert not template.find_resources(kind)
    assert all(not s["Properties"].get("MapPublicIpOnLaunch") for s in template.find_resources("AWS::EC2::Subnet").values())
    endpoints = template.find_resources("AWS::EC2::VPCEndpoint")
    assert len(endpoints) == len(ENDPOINT_SERVICES)
    assert all(e["Properties"]["PrivateDnsEnabled"] for e in endpoints.values())
    template.has_resource_properties("AWS::EC2::FlowLog", {"TrafficType": "REJECT"})


def test_only_the_functions_given_access_reach_the_cache_and_may_connect(synth):
    template = synth(lambda stack: add_claims_cache(stack, functions=2))
    groups = template.find_resources("AWS::EC2::SecurityGroup")
    # nothing open to the world, in or out
    for group in groups.values():
        for rule in group["Properties"].get("SecurityGroupIngress", []) + group["Properties"].get("SecurityGroupEgress", []):
            assert rule.get("CidrIp") not in ("0.0.0.0/0",) or rule.get("IpProtocol") == "icmp"
    ingress = template.find_resources("AWS::EC2::SecurityGroupIngress")
    to_cache = [r["Properties"] for r in ingress.values() if r["Properties"]["FromPort"] == REDIS_PORT]
    assert len(to_cache) == 1 and "SourceSecurityGroupId" in to_cache[0]  # from the clients' group, no CIDR
    client_group = to_cache[0]["SourceSecurityGroupId"]["Fn::GetAtt"][0]
    functions = template.find_resources("AWS::Lambda::Function")
    assert len(functions) == 2
    for function in functions.values():
        vpc = function["Properties"]["VpcConfig"]
        assert vpc["SecurityGroupIds"] == [{"Fn::GetAtt": [client_group, "GroupId"]}] and len(vpc["SubnetIds"]) == 2
    connects = [s for p in template.find_resources("AWS::IAM::Policy").values()
                for s in p["Properties"]["PolicyDocument"]["Statement"] if s["Action"] == "elasticache:Connect"]
    assert len(connects) == 2 and all(len(s["Resource"]) == 2 for s in connects)  # the cache and its user, nothing else


def test_cdk_nag_finds_nothing_unaccepted(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'functions'}"}
    result = subprocess.run([sys.executable, "-m", "tests.constructs.claims_cache_stack", str(tmp_path)],
                            capture_output=True, text=True, timeout=300, cwd=ROOT, env=env, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "ClaimsCache.template.json").exists()


def test_the_users_access_string_allows_what_the_store_sends_and_nothing_dangerous(redis_endpoint):
    """The cache user's ACL (ElastiCache's access strings are Redis ACL rules), on a real server: claims, completions,
    releases, accepts and a token bucket work as that user; another key, FLUSHALL and CONFIG are refused."""
    import redis
    from inferbus_lambda.claims import RedisClaimStore
    from inferbus_lambda.claims.redis import connect
    from inferbus_lambda.contracts import ImageSubmitted, new_event
    from inferbus_lambda.rate_limit import RedisTokenBucket

    admin = connect(redis_endpoint)
    admin.execute_command("ACL", "SETUSER", "claims-test", "reset", ">secret", *ACCESS_STRING.split())
    host, port = redis_endpoint.rsplit(":", 1)
    client = redis.Redis(host=host, port=int(port), username="claims-test", password="secret")
    try:
        store = RedisClaimStore(client, scope="acl", expires_after_seconds=60)
        events = [new_event(ImageSubmitted(pixels=[i] * 64), source="acl.test", event_id=f"e{i}") for i in range(3)]
        assert [s.value for s in store.claim(events, remaining_ms=5_000)] == ["claimed"] * 3
        assert store.complete([(events[0], {"result_id": "r"})]) == [] and store.release(events[1:]) == []
        assert store.accept_once(events[1], owner="x").value == "claimed"
        assert RedisTokenBucket(client, scope="acl", rate=5).take(3) == 3
        for refused in (lambda: client.set("other:key", "1"), client.flushall, lambda: client.config_get("*")):
            with pytest.raises(redis.exceptions.NoPermissionError):
                refused()
    finally:
        admin.execute_command("ACL", "DELUSER", "claims-test")
        for key in admin.scan_iter(match="inferbus:{acl}*"):
            admin.delete(key)
