"""The one place inferbus's Lambda functions get their role, log group and tracing.

Secure defaults
---------------
- Each function has a role of its own that may only write to its own log group and send
  X-Ray segments; callers add grants for what the function calls.
- Active tracing; logs kept ``log_retention``; Lambda Insights (CPU, memory) when ``insights``
  (its extension layer and the AWS managed policy it needs).
- Code is either the function's own zip asset (``bundling.py``: only what it imports) or a
  container image (``lambda_.DockerImageCode``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from ..nag import acknowledge_insights_policy, acknowledge_tracing_wildcard

# The Lambda Insights extension; CDK picks the layer for the region and architecture at deploy.
INSIGHTS_VERSION = lambda_.LambdaInsightsVersion.VERSION_1_0_498_0


@dataclass(frozen=True)
class FunctionCode:
    """What a function runs: the shared zip bundle with a handler, or a container image.

    Parameters
    ----------
    handler
        ``module.function``, as the zip bundle's root sees it. An image function runs the
        same handler (its ``ImageConfig.Command``, which the embedded runtime reads too).
    zip_code, runtime
        The function's zip asset and the Python runtime, for a zip function.
    image_code
        A container image, for an image function (``zip_code`` must then be ``None``).
    """

    handler: str
    zip_code: lambda_.Code | None = None
    runtime: lambda_.Runtime | None = None
    image_code: lambda_.DockerImageCode | None = None

    def __post_init__(self) -> None:
        if (self.zip_code is None) == (self.image_code is None):
            raise ValueError(f"{self.handler}: give exactly one of zip_code and image_code")
        if self.zip_code is not None and self.runtime is None:
            raise ValueError(f"{self.handler}: a zip function needs a runtime")


@dataclass(frozen=True)
class FunctionSpec:
    """Everything about one function except where it lives in the construct tree."""

    code: FunctionCode
    architecture: lambda_.Architecture
    memory_mb: int
    timeout_s: int
    environment: dict[str, str]
    log_retention: logs.RetentionDays
    description: str = ""
    reserved_concurrency: int | None = None  # None: bounded by its event source's MaximumConcurrency instead
    insights: bool = False
    # In a VPC: ``vpc``, ``vpc_subnets`` and ``security_groups`` (``ClaimsCache.network_of()``); None: Lambda's own network.
    network: Mapping[str, Any] | None = None


def add_function(scope: Construct, spec: FunctionSpec) -> tuple[lambda_.Function, iam.Role, logs.LogGroup]:
    """Add ``Logs``, ``Role`` and ``Function`` to ``scope`` (ids fixed, so logical ids stay stable)."""
    scope_id = scope.node.id
    log_group = logs.LogGroup(scope, "Logs", retention=spec.log_retention)
    role = iam.Role(
        scope,
        "Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"{scope_id}: its own logs, X-Ray; nothing else unless granted",
    )
    role.add_to_policy(iam.PolicyStatement(actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                                           resources=[log_group.log_group_arn]))
    common = dict(
        architecture=spec.architecture,
        memory_size=spec.memory_mb,
        timeout=Duration.seconds(spec.timeout_s),
        role=role,
        log_group=log_group,
        tracing=lambda_.Tracing.ACTIVE,
        description=spec.description,
        reserved_concurrent_executions=spec.reserved_concurrency,
        insights_version=INSIGHTS_VERSION if spec.insights else None,
        **(spec.network or {}),
    )
    if spec.code.image_code is not None:
        function: lambda_.Function = lambda_.DockerImageFunction(
            scope, "Function", code=spec.code.image_code, environment=spec.environment, **common,
        )
    else:
        function = lambda_.Function(
            scope, "Function", code=spec.code.zip_code, handler=spec.code.handler, runtime=spec.code.runtime,
            environment=spec.environment, **common,
        )
    acknowledge_tracing_wildcard(role)
    if spec.insights:
        acknowledge_insights_policy(role)
    return function, role, log_group


class WorkflowFunction(Construct):
    """A function that a workflow step invokes (no event source of its own)."""

    def __init__(self, scope: Construct, construct_id: str, *, spec: FunctionSpec) -> None:
        super().__init__(scope, construct_id)
        self.function, self.role, self.log_group = add_function(self, spec)
