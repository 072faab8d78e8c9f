"""A real Redis for the tests that need one: ``INFERBUS_REDIS_URL`` if set, else a redis-server started on a
free port for the session (Debian's ``redis-server``; Valkey's ``valkey-server`` works the same).

Without a server, a test that needs one is skipped with the one command that provides it; with
``INFERBUS_REQUIRE_BROKERS=1`` (CI, ``.ci/run``) it fails instead, so CI never skips it silently.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

START = "apt-get install redis-server (then the tests start one), or: redis-server --daemonize yes --port 6379 " \
        "&& export INFERBUS_REDIS_URL=redis://localhost:6379"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _missing(reason: str) -> None:
    if os.environ.get("INFERBUS_REQUIRE_BROKERS") == "1":
        pytest.fail(f"{reason} and INFERBUS_REQUIRE_BROKERS=1: {START}")
    pytest.skip(f"{reason}: {START}")


@pytest.fixture(scope="session")
def redis_endpoint() -> Iterator[str]:
    """``host:port`` of a running Redis."""
    import redis

    url = os.environ.get("INFERBUS_REDIS_URL")
    if url:
        client = redis.Redis.from_url(url)
        try:
            client.ping()
        except redis.exceptions.ConnectionError:
            _missing(f"no Redis answers at INFERBUS_REDIS_URL={url}")
        kwargs = client.connection_pool.connection_kwargs
        yield f"{kwargs['host']}:{kwargs['port']}"
        return
    process, port = start_server("--save", "")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def start_server(*options: str) -> tuple[subprocess.Popen, int]:
    """A redis-server on a free loopback port with ``options`` (``--save ""``), once it answers; or skip/fail."""
    import redis

    server = shutil.which("redis-server") or shutil.which("valkey-server")
    if server is None:
        _missing("no redis-server on PATH")
    port = free_port()
    process = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--appendonly", "no", *options],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    for _ in range(100):
        try:
            client.ping()
            return process, port
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    process.kill()
    _missing(f"{server} did not start on port {port}")
    raise AssertionError("unreachable")  # _missing skips or fails


@pytest.fixture
def redis_client(redis_endpoint: str) -> Iterator[object]:
    """A client on an empty database."""
    from inferbus_lambda.claims.redis import connect

    client = connect(redis_endpoint)
    client.flushdb()
    yield client
    client.flushdb()
