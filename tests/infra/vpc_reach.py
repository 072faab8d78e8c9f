"""What a function in a VPC calls, read from its role, and whether its VPC's endpoints let the calls through.

A function in an isolated subnet reaches an AWS API only through a VPC endpoint of that service whose policy
allows the action. The actions a function may call are its role's; those AWS calls *for* the role, outside the
function's network, need no endpoint (:data:`CALLED_FOR_THE_ROLE`)."""

from __future__ import annotations

import fnmatch
from typing import Any

# Services whose actions on a function's role are used by AWS, not called from the function's network:
# ec2 (Lambda makes the function's network interfaces), logs (Lambda ships its logs), elasticache:Connect
# (the cache checks an IAM-signed token: no API call), kms (SQS, SNS and DynamoDB call KMS with the caller's
# forwarded credentials), kafka-cluster, kafka, mq and secretsmanager (the event source mapping's pollers).
CALLED_FOR_THE_ROLE = frozenset({"ec2", "logs", "elasticache", "kms", "kafka-cluster", "kafka", "mq", "secretsmanager"})
# An SQS event source mapping's poller receives and deletes as the function's role; the function itself does
# neither (it hands records back by its batch response, or with ChangeMessageVisibility, which it does call).
SQS_POLLER_ACTIONS = frozenset({"sqs:ReceiveMessage", "sqs:DeleteMessage"})


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _ref(value: Any) -> str | None:
    if isinstance(value, dict):
        if "Ref" in value:
            return value["Ref"]
        if "Fn::GetAtt" in value:
            return value["Fn::GetAtt"][0]
    return None


def role_actions(resources: dict[str, Any], role: str) -> set[str]:
    """Every action the role's inline and attached (in-template) policies allow."""
    actions = set()
    policies = [r["Properties"]["PolicyDocument"] for r in resources.values()
                if r["Type"] == "AWS::IAM::Policy" and role in {_ref(x) for x in r["Properties"].get("Roles", [])}]
    policies += [p["PolicyDocument"] for p in resources[role]["Properties"].get("Policies", [])]
    for document in policies:
        for statement in document["Statement"]:
            if statement.get("Effect", "Allow") == "Allow":
                actions |= set(_listed(statement["Action"]))
    return actions


def service_of(endpoint: dict[str, Any]) -> str:
    """``events`` from ``com.amazonaws.<region>.events`` (written as an Fn::Join by CDK)."""
    name = endpoint["Properties"]["ServiceName"]
    parts = name["Fn::Join"][1] if isinstance(name, dict) else [name]
    return str(parts[-1]).rsplit(".", 1)[-1]


def allowed_by(endpoint: dict[str, Any], action: str) -> bool:
    document = endpoint["Properties"].get("PolicyDocument")
    if document is None:
        return True  # no policy: the endpoint lets every call through
    return any(statement.get("Effect") == "Allow" and any(fnmatch.fnmatchcase(action, pattern) or
                                                          fnmatch.fnmatchcase(pattern, action)
                                                          for pattern in _listed(statement["Action"]))
               for statement in document["Statement"])


def unreachable_calls(resources: dict[str, Any]) -> dict[str, list[str]]:
    """Per function in a VPC: the actions of its role that no endpoint of its VPC lets through (empty: none)."""
    found: dict[str, list[str]] = {}
    for name, function in resources.items():
        if function["Type"] != "AWS::Lambda::Function" or "VpcConfig" not in function["Properties"]:
            continue
        vpcs = {_ref(resources[_ref(subnet)]["Properties"]["VpcId"]) for subnet in function["Properties"]["VpcConfig"]["SubnetIds"]}
        endpoints = [e for e in resources.values() if e["Type"] == "AWS::EC2::VPCEndpoint" and _ref(e["Properties"]["VpcId"]) in vpcs]
        polled = any(r["Type"] == "AWS::Lambda::EventSourceMapping" and _ref(r["Properties"]["FunctionName"]) == name
                     and resources.get(_ref(r["Properties"].get("EventSourceArn")) or "", {}).get("Type") == "AWS::SQS::Queue"
                     for r in resources.values())
        missing = []
        for action in sorted(role_actions(resources, _ref(function["Properties"]["Role"]))):
            service = action.split(":", 1)[0]
            if service in CALLED_FOR_THE_ROLE or (polled and action in SQS_POLLER_ACTIONS):
                continue
            if not any(service_of(e) == service and allowed_by(e, action) for e in endpoints):
                missing.append(action)
        found[name] = missing
    return found
