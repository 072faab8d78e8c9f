"""Claims in Redis or Valkey: the third implementation of :class:`~.base.ClaimStore`.

The reference is Powertools' Redis persistence layer (``RedisCachePersistenceLayer``): one string
key per claim holding the record as JSON, an expiry on the key (``SET ... EXAT``) so Redis deletes
it when the claim lapses, and a conditional write for taking a claim. Powertools takes an
in-progress claim with ``SET NX`` and, when one is already there, reads it and overwrites an expired
one in a second step (guarded by a short lock key); here the condition (:func:`~.base.claimable`)
is evaluated *inside* Redis by a Lua script, so reading the old claim and writing the new one are one
atomic step for every record of a batch: no window in which two invocations both see a claim as
expired.

Requests per batch: ONE ``EVALSHA`` claims a whole batch (any size), ONE pipeline of ``SET`` completes
a group of results and ONE ``DEL`` releases a batch; a workflow's accept is one ``EVALSHA``.
:attr:`RedisClaimStore.requests` counts them (the round trips), :attr:`RedisClaimStore.ecpus` what they cost.

Keys: ``inferbus:{<scope>}:<claim key>``. The braces are a Redis Cluster hash tag: every key of one
scope (one consumer, one workflow) lives in one hash slot, which a multi-key script needs on a
cluster (ElastiCache Serverless shards by slot behind its one endpoint). The price is that one consumer's claims are served by one
shard; a shard takes far more requests per second than one consumer's batches make.

Connection errors and timeouts are answered per record as DynamoDB's throttling is: a claim that
could not be written is :attr:`~.base.ClaimStatus.UNAVAILABLE` (redelivered later), a completion
or a release that could not be written is reported back (its claim expires with its hold).

Example
-------
>>> import redis
>>> store = RedisClaimStore(redis.Redis(port=6379), scope="image-classifier", expires_after_seconds=3600)  # doctest: +SKIP
>>> store.claim(events, remaining_ms=30_000)  # doctest: +SKIP
[<ClaimStatus.CLAIMED: 'claimed'>]
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .base import ClaimRecord, ClaimState, ClaimStatus, ClaimStore, PutAnswer

__all__ = ["KEY_PREFIX", "RedisClaimStore"]

KEY_PREFIX = "inferbus"
T = TypeVar("T")

# claims.base.claimable, in Lua, for every key of a batch at once (a script runs atomically). ARGV[1] is
# now in ms; ARGV[1 + i] the i-th record's JSON, whose "expires_at_s" is also its key's expiry. Answers
# "" for a claim written, else the JSON that blocked it.
CLAIM_SCRIPT = """
local now_ms = tonumber(ARGV[1])
local answers = {}
for i, key in ipairs(KEYS) do
  local held = redis.call('GET', key)
  local free = not held
  if held then
    local old = cjson.decode(held)
    free = old.expires_at_s * 1000 < now_ms - (now_ms % 1000)
      or (old.state == 'INPROGRESS' and (tonumber(old.held_until_ms) or 0) < now_ms)
  end
  if free then
    local record = ARGV[i + 1]
    redis.call('SET', key, record, 'EXAT', cjson.decode(record).expires_at_s)
    answers[i] = ''
  else
    answers[i] = held
  end
end
return answers
"""
# claims.base.acceptable: only a missing or expired claim lets a workflow own the event.
ACCEPT_SCRIPT = """
local held = redis.call('GET', KEYS[1])
if held and cjson.decode(held).expires_at_s * 1000 >= tonumber(ARGV[1]) - (tonumber(ARGV[1]) % 1000) then
  return held
end
redis.call('SET', KEYS[1], ARGV[2], 'EXAT', cjson.decode(ARGV[2]).expires_at_s)
return ''
"""
# End the hold of an in-progress claim taken before ARGV[1]; 1 if one was.
END_HOLD_SCRIPT = """
local held = redis.call('GET', KEYS[1])
if not held then return 0 end
local old = cjson.decode(held)
if old.state ~= 'INPROGRESS' or (tonumber(old.claimed_at_ms) or 0) >= tonumber(ARGV[1]) then return 0 end
old.held_until_ms = tonumber(ARGV[2]) - 1
redis.call('SET', KEYS[1], cjson.encode(old), 'KEEPTTL')
return 1
"""


class RedisClaimStore(ClaimStore):
    """Claims in Redis or Valkey (a standalone server, or a cluster such as ElastiCache Serverless).

    Parameters
    ----------
    client
        A ``redis.Redis`` (or ``redis.RedisCluster``) client; reuse the function's one. Read at each call:
        assigning another (a wrapper that injects faults) takes effect at once.
    max_attempts, base_delay_s, sleep
        Tries per request when the connection fails (after the client's own retries), the first backoff
        ceiling (doubling, full jitter) and how to wait: as :class:`~.dynamodb.DynamoDBClaimStore`'s. Every
        request is safe to repeat: a claim script whose answer was lost finds its own claims and answers
        them held (redelivered later), a completion or a release writes the same again.
    scope, expires_after_seconds
        See :class:`~.base.ClaimStore`.

    Attributes
    ----------
    requests
        Round trips made, by kind (``evalsha``, ``pipeline``, ``del``): what a batch cost.
    ecpus
        ElastiCache Serverless's unit of billing, estimated: one per key read or written (a claim's
        value is far under 1 KB; a script's ``GET`` and ``SET`` are two), not one per round trip.
    """

    def __init__(self, client: Any, *, scope: str, expires_after_seconds: int, max_attempts: int = 3,
                 base_delay_s: float = 0.025, sleep: Callable[[float], None] = time.sleep) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be 1 or more, got {max_attempts}")
        super().__init__(scope=scope, expires_after_seconds=expires_after_seconds)
        self.client = client
        self.max_attempts, self.base_delay_s, self.sleep = max_attempts, base_delay_s, sleep
        self.requests: dict[str, int] = {}
        self.ecpus = 0
        self._claim = client.register_script(CLAIM_SCRIPT)
        self._accept = client.register_script(ACCEPT_SCRIPT)
        self._end_hold = client.register_script(END_HOLD_SCRIPT)

    # -- the layout ------------------------------------------------------------------------------

    def key(self, key: str) -> str:
        """The Redis key of a claim key (:func:`~.base.claim_key`): one hash slot per scope."""
        return f"{KEY_PREFIX}:{{{self.scope}}}:{key}"

    @staticmethod
    def value(record: ClaimRecord) -> str:
        """The JSON a key holds for ``record``."""
        fields = {"state": record.state.value, "validation": record.validation, "expires_at_s": record.expires_at_s}
        if record.held_until_ms is not None:
            fields["held_until_ms"] = record.held_until_ms
        if record.claimed_at_ms is not None:
            fields["claimed_at_ms"] = record.claimed_at_ms
        if record.result is not None:
            fields["result"] = dict(record.result)
        return json.dumps(fields, separators=(",", ":"))

    @staticmethod
    def record(key: str, value: str | bytes) -> ClaimRecord:
        """The claim under ``key`` (a claim key) that ``value`` stores (the inverse of :meth:`value`)."""
        fields: Mapping[str, Any] = json.loads(value)
        return ClaimRecord(key=key, state=ClaimState(fields["state"]), validation=fields["validation"],
                           expires_at_s=int(fields["expires_at_s"]),
                           held_until_ms=_number(fields.get("held_until_ms")),
                           claimed_at_ms=_number(fields.get("claimed_at_ms")), result=fields.get("result"))

    @property
    def claim_sha(self) -> str:
        """The SHA-1 of the claim script: an ``EVALSHA`` of it is a claim (what a fault injector tells apart)."""
        return str(self._claim.sha)

    def _count(self, kind: str, ecpus: int) -> None:
        self.requests[kind] = self.requests.get(kind, 0) + 1
        self.ecpus += ecpus

    def _attempts(self, kind: str, ecpus: int, request: Callable[[], T]) -> T:
        """``request()``, tried up to :attr:`max_attempts` times while the connection fails; the last failure raises."""
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        for attempt in range(1, self.max_attempts + 1):
            self._count(kind, ecpus)
            try:
                return request()
            except (RedisConnectionError, RedisTimeoutError):
                if attempt == self.max_attempts:
                    raise
                self.sleep(random.uniform(0, self.base_delay_s * 2 ** (attempt - 1)))  # noqa: S311 - jitter
        raise AssertionError("unreachable")

    # -- the primitives --------------------------------------------------------------------------

    def put_in_progress(self, records: Sequence[ClaimRecord], *, now_ms: int) -> list[PutAnswer]:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        keys, values = [self.key(r.key) for r in records], [now_ms, *map(self.value, records)]
        try:
            held = self._attempts("evalsha", 2 * len(records),
                                  lambda: self._claim(keys=keys, args=values, client=self.client))
        except (RedisConnectionError, RedisTimeoutError):
            return [ClaimStatus.UNAVAILABLE] * len(records)  # nothing written (a script runs whole or not at all)
        return [ClaimStatus.CLAIMED if not value else self.record(record.key, value)
                for record, value in zip(records, held, strict=True)]

    def put_completed(self, records: Sequence[ClaimRecord]) -> list[str]:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        if not records:
            return []

        def write() -> list[Any]:
            pipeline = self.client.pipeline(transaction=False)
            for record in records:
                pipeline.set(self.key(record.key), self.value(record), exat=record.expires_at_s)
            return list(pipeline.execute(raise_on_error=False))

        try:
            answers = self._attempts("pipeline", len(records), write)
        except (RedisConnectionError, RedisTimeoutError):
            return [record.key for record in records]
        return [record.key for record, answer in zip(records, answers, strict=True) if isinstance(answer, Exception)]

    def delete(self, keys: Sequence[str]) -> list[str]:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        if not keys:
            return []
        names = [self.key(key) for key in keys]
        try:  # one slot: one command for the batch, even on a cluster
            self._attempts("del", len(keys), lambda: self.client.delete(*names))
        except (RedisConnectionError, RedisTimeoutError):
            return list(keys)
        return []

    def put_accepted(self, record: ClaimRecord, *, now_ms: int) -> tuple[bool, ClaimRecord | None]:
        self._count("evalsha", 2)
        held = self._accept(keys=[self.key(record.key)], args=[now_ms, self.value(record)], client=self.client)
        return (True, None) if not held else (False, self.record(record.key, held))

    def end_hold(self, key: str, *, claimed_before_ms: int, now_ms: int) -> bool:
        self._count("evalsha", 2)
        return bool(self._end_hold(keys=[self.key(key)], args=[claimed_before_ms, now_ms], client=self.client))


def _number(value: Any) -> int | None:
    return int(value) if value is not None else None


# -- connecting: what a function does with its environment ---------------------------------------

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
IAM_TOKEN_LIFETIME_S = 900  # ElastiCache takes an IAM auth token for 15 minutes; a connection made with it lasts 12 hours
CONNECT_TIMEOUT_S = 2.0
RETRIES = 2
DEFAULT_PORT = 6379


class IamAuthToken:
    """ElastiCache IAM authentication: the password is a SigV4-presigned ``connect`` request for ``user_id`` on the
    serverless cache ``cache_name``, signed with the function's role; a new one is made when the last is 10 minutes
    old. No secret is stored anywhere (AWS's documented token; see docs/channels.md)."""

    def __init__(self, *, user_id: str, cache_name: str, region: str, session: Any = None) -> None:
        self.user_id, self.cache_name, self.region = user_id, cache_name, region
        self._session = session
        self._token: tuple[float, str] | None = None

    def get_credentials(self) -> tuple[str, str]:  # redis.CredentialProvider's one method

        if self._token is None or time.monotonic() - self._token[0] > IAM_TOKEN_LIFETIME_S * 2 / 3:
            self._token = (time.monotonic(), self.token())
        return self.user_id, self._token[1]

    def token(self) -> str:
        from urllib.parse import urlencode

        import botocore.session
        from botocore.model import ServiceId
        from botocore.signers import RequestSigner

        session = self._session or botocore.session.get_session()
        signer = RequestSigner(ServiceId("elasticache"), self.region, "elasticache", "v4", session.get_credentials(),
                               session.get_component("event_emitter"))
        query = urlencode({"Action": "connect", "User": self.user_id, "ResourceType": "ServerlessCache"})
        request = {"method": "GET", "url": f"https://{self.cache_name}/?{query}", "body": {}, "headers": {}, "context": {}}
        url = signer.generate_presigned_url(request, operation_name="connect", expires_in=IAM_TOKEN_LIFETIME_S,
                                            region_name=self.region)
        return url.removeprefix("https://")


def connect(endpoint: str, *, user_id: str | None = None, cache_name: str | None = None, region: str | None = None) -> Any:
    """A client for ``endpoint`` (``host:port``, or ``host`` on port 6379): plain to a loopback server (a local redis-server, the embedded
    runtime's), else TLS (ElastiCache Serverless speaks only TLS), with IAM auth when ``user_id`` and ``cache_name``
    are given. It connects on its first command, not here: a function's import (and a synth that imports it) makes
    no connection.

    A standalone client, not a cluster one, even for ElastiCache Serverless: its single endpoint routes each
    command by hash slot itself, and every key the store sends in one command shares one slot (the ``{scope}``
    hash tag), so no command is cross-slot and no cluster topology has to be read at a cold start.
    """
    import redis
    from redis.backoff import ExponentialWithJitterBackoff
    from redis.retry import Retry

    host, _, port = endpoint.rpartition(":")
    if not (host and port.isdigit()):
        host, port = endpoint, str(DEFAULT_PORT)
    # A few quick retries, then the records are answered as unavailable (redelivered later): a Lambda's time is short.
    options: dict[str, Any] = {"socket_timeout": CONNECT_TIMEOUT_S, "socket_connect_timeout": CONNECT_TIMEOUT_S,
                               "retry": Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.1), RETRIES)}
    if host in LOOPBACK:
        return redis.Redis(host=host, port=int(port), **options)
    if user_id and cache_name:
        options["credential_provider"] = IamAuthToken(user_id=user_id, cache_name=cache_name, region=region or "")
    return redis.Redis(host=host, port=int(port), ssl=True, **options)
