"""A bare stack holding the claims cache and two functions that use it, as the inferbus stack connects them."""

from __future__ import annotations

from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from inferbus.model.settings import InferbusSettings
from infra.constructs.claims_cache import ClaimsCache
from infra.constructs.function import FunctionCode, FunctionSpec, add_function
from tests.constructs.ordered_consumer_stack import HANDLER_DIR  # a directory asset: nothing to bundle


def add_claims_cache(stack: Stack, functions: int = 2) -> ClaimsCache:
    """The cache and ``functions`` functions in its network, each allowed to connect."""
    cache = ClaimsCache(stack, "ClaimsCache", cache_name="inferbus-test", log_retention=logs.RetentionDays.ONE_WEEK)
    for n in range(functions):
        spec = FunctionSpec(code=FunctionCode("h.handler", zip_code=lambda_.Code.from_asset(str(HANDLER_DIR)),
                                              runtime=lambda_.Runtime(f"python{InferbusSettings().python_version}",
                                                                              lambda_.RuntimeFamily.PYTHON)),
                            architecture=lambda_.Architecture.ARM_64, memory_mb=128, timeout_s=3,
                            environment={"REDIS_ENDPOINT": cache.endpoint}, log_retention=logs.RetentionDays.ONE_WEEK,
                            network=cache.network_of())
        function, _, _ = add_function(Construct(stack, f"Claimer{n}"), spec)
        cache.connect(function)
    return cache


if __name__ == "__main__":  # synthesized with the app's cdk-nag gate by a test (a failing gate ends the process)
    import sys

    from infra.nag import add_nag_checks

    app = App(outdir=sys.argv[1])
    add_nag_checks(app)
    add_claims_cache(Stack(app, "ClaimsCache"))
    app.synth()
