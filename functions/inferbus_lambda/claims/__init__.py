"""Exactly-once claims on events: the :class:`ClaimStore` interface, its policy, and the stores.

=========================  ====================================================================
name (``CLAIM_STORE``)     implementation
=========================  ====================================================================
``dynamodb`` (default)     :class:`DynamoDBClaimStore`: the idempotency table the stack makes
``redis``                  :class:`RedisClaimStore`: Redis or Valkey at ``REDIS_ENDPOINT`` (ElastiCache
                           Serverless in the stack, a local redis-server in the embedded runtime)
=========================  ====================================================================

A function gets its store from its environment (:func:`claim_store`); a new store is one
module with a :class:`ClaimStore` subclass and one line in :data:`CLAIM_STORES`.
:class:`InMemoryClaimStore` (one process: tests and local tools) is not in the registry on
purpose: a deployed function's containers would each keep their own claims.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..environment import ClaimsEnvironment
from ..errors import ConfigurationError, registered
from .base import (
    ClaimRecord,
    ClaimState,
    ClaimStatus,
    ClaimStore,
    PutAnswer,
    acceptable,
    claim_key,
    claimable,
    data_hash,
    decide,
)
from .dynamodb import CLAIM_BATCH, COMPLETE_BATCH, DynamoDBClaimStore
from .memory import InMemoryClaimStore
from .redis import RedisClaimStore

__all__ = ["CLAIM_BATCH", "CLAIM_STORES", "COMPLETE_BATCH", "ClaimRecord", "ClaimState", "ClaimStatus", "ClaimStore",
           "DynamoDBClaimStore", "InMemoryClaimStore", "RedisClaimStore", "PutAnswer", "acceptable", "claim_key", "claim_store", "claimable",
           "data_hash", "decide"]


def _dynamodb(environment: ClaimsEnvironment, scope: str, client: Any) -> ClaimStore:
    if client is None:
        import boto3

        client = boto3.client("dynamodb")
    return DynamoDBClaimStore(environment.IDEMPOTENCY_TABLE_NAME, scope=scope,
                              expires_after_seconds=environment.IDEMPOTENCY_TTL_SECONDS, client=client)


_REDIS_CLIENTS: dict[str, Any] = {}  # by endpoint: one connection pool per process, reused by every invocation


def _redis(environment: ClaimsEnvironment, scope: str, client: Any) -> ClaimStore:
    import os

    from .redis import connect

    if not hasattr(client, "register_script"):  # the caller's client is for the default store (DynamoDB): make ours
        endpoint = environment.REDIS_ENDPOINT
        if not endpoint:
            raise ConfigurationError(f"{environment.POWERTOOLS_SERVICE_NAME}: CLAIM_STORE=redis needs REDIS_ENDPOINT "
                                     "(host:port); the stack sets it, redeploy")
        if endpoint not in _REDIS_CLIENTS:
            _REDIS_CLIENTS[endpoint] = connect(endpoint, user_id=environment.REDIS_USER,
                                               cache_name=environment.REDIS_CACHE_NAME, region=os.environ.get("AWS_REGION"))
        client = _REDIS_CLIENTS[endpoint]
    return RedisClaimStore(client, scope=scope, expires_after_seconds=environment.IDEMPOTENCY_TTL_SECONDS)


# CLAIM_STORE name -> how to make the store from the function's environment, its scope and a client.
CLAIM_STORES: dict[str, Callable[[ClaimsEnvironment, str, Any], ClaimStore]] = {
    "dynamodb": _dynamodb,
    "redis": _redis,
}


def claim_store(environment: ClaimsEnvironment, *, scope: str, client: Any = None) -> ClaimStore:
    """The store ``environment.CLAIM_STORE`` names, keyed under ``scope``.

    Parameters
    ----------
    environment
        The function's validated environment.
    scope
        Key prefix: the consumer's service name, or the workflow's name.
    client
        The store's client (for DynamoDB, a boto3 client); default, a new one.

    Raises
    ------
    ConfigurationError
        When no store has that name.
    """
    make = registered(CLAIM_STORES, "CLAIM_STORE", environment.CLAIM_STORE, service=environment.POWERTOOLS_SERVICE_NAME,
                      what="claims store")
    return make(environment, scope, client)
