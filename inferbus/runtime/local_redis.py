"""The local Redis that serves a template's ElastiCache cache (the Redis claims store) in the twin.

A Redis that answers ``PING`` may still refuse the claims' writes: one that can no longer save its
snapshot (``MISCONF``, say its working folder was deleted), a read-only replica, one that wants a
password or is out of memory. :func:`prepare` writes and deletes a probe key before anything runs,
so such a server is named in one line that says what to do, and :func:`refusal` gives that line for
a Redis error met later (the server stopped mid-run).

Example
-------
>>> import redis
>>> prepare("redis://127.0.0.1:6379")  # doctest: +SKIP
>>> refusal(redis.exceptions.ReadOnlyError("You can't write against a read only replica."), "redis://r:6379")
"the Redis at redis://r:6379 is a read-only replica: point INFERBUS_REDIS_URL at its primary (You can't write ...)"
"""

from __future__ import annotations

import os
from typing import Any

from .specs import UnsupportedTemplateError

__all__ = ["DEFAULT_LOCAL_REDIS", "LOCAL_REDIS_VARIABLE", "local_redis_url", "prepare", "refusal"]

LOCAL_REDIS_VARIABLE = "INFERBUS_REDIS_URL"  # where a template's ElastiCache cache is served locally
DEFAULT_LOCAL_REDIS = "redis://127.0.0.1:6379"
START = "redis-server --daemonize yes --port 6379"
PROBE_KEY = "inferbus:probe"
# A refused command's first word (Redis's error code) -> what to do about it.
ADVICE = {
    "MISCONF": ("cannot save its snapshot to disk (its working folder gone, unwritable or full), so it refuses "
                f"writes: restart it from a folder it can write (cd /tmp && {START}) or let it write without saving "
                "(redis-cli config set stop-writes-on-bgsave-error no)"),
    "READONLY": f"is a read-only replica: point {LOCAL_REDIS_VARIABLE} at its primary",
    "OOM": "is out of memory (maxmemory) and refuses writes: raise its maxmemory or free some keys",
    "NOPERM": "refuses the claims' commands to this user (ACL): give the user +@all on inferbus:* keys or use another",
}


def local_redis_url() -> str:
    """The local Redis: ``INFERBUS_REDIS_URL``, else ``redis://127.0.0.1:6379``."""
    return os.environ.get(LOCAL_REDIS_VARIABLE) or DEFAULT_LOCAL_REDIS


def refusal(error: Any, url: str | None = None) -> str:
    """One line saying why the Redis at ``url`` refused a request and what to do.

    Parameters
    ----------
    error
        A ``redis.exceptions.RedisError``.
    url
        The server (default: :func:`local_redis_url`).
    """
    from redis import exceptions

    url = url or local_redis_url()
    detail = " ".join(str(error).split())
    if isinstance(error, exceptions.AuthenticationError | exceptions.AuthenticationWrongNumberOfArgsError):
        return (f"the Redis at {url} wants a password ({detail}): put it in {LOCAL_REDIS_VARIABLE} "
                "(redis://:PASSWORD@HOST:PORT)")
    if isinstance(error, exceptions.ConnectionError | exceptions.TimeoutError):
        return (f"no Redis answers at {url} ({detail}): start one ({START}) or set {LOCAL_REDIS_VARIABLE}")
    code = detail.split(" ", 1)[0]
    if isinstance(error, exceptions.ReadOnlyError):
        code = "READONLY"
    elif isinstance(error, exceptions.OutOfMemoryError):
        code = "OOM"
    elif isinstance(error, exceptions.NoPermissionError):
        code = "NOPERM"
    advice = ADVICE.get(code)
    if advice is not None:
        return f"the Redis at {url} {advice} ({detail})"
    return (f"the Redis at {url} refused a request ({detail}): fix that server, or point {LOCAL_REDIS_VARIABLE} "
            f"at another ({START})")


def prepare(url: str) -> None:
    """Check that the Redis at ``url`` takes writes, then delete the claims an earlier run left there.

    A new ElastiCache cache is empty, as a new DynamoDB table is in moto; so one embedded pipeline per
    local Redis at a time (point another at another server).

    Raises
    ------
    UnsupportedTemplateError
        No Redis answers, or it refuses writes: one line from :func:`refusal`.
    """
    import redis
    from inferbus_lambda.claims.redis import KEY_PREFIX

    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        client.set(PROBE_KEY, b"", ex=60)
        client.delete(PROBE_KEY)
        stale = list(client.scan_iter(match=f"{KEY_PREFIX}:*", count=1000))
        for start in range(0, len(stale), 1000):
            client.delete(*stale[start:start + 1000])
    except redis.exceptions.RedisError as error:
        prefix = "the template keeps claims in Redis (claims_store=redis) and "
        raise UnsupportedTemplateError(prefix + refusal(error, url)) from None
    finally:
        client.close()
