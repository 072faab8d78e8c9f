"""A test that needs a Redis skips with the one command that provides it, except in CI (INFERBUS_REQUIRE_BROKERS=1),
where it fails: CI never skips a broker's tests silently."""

from __future__ import annotations

import pytest

from tests.redis_server import START, _missing


def test_without_a_server_a_test_skips_naming_the_command(monkeypatch):
    monkeypatch.delenv("INFERBUS_REQUIRE_BROKERS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no redis-server on PATH: apt-get install redis-server"):
        _missing("no redis-server on PATH")
    assert "redis-server --daemonize yes --port 6379" in START and "\n" not in START


def test_in_ci_the_same_test_fails(monkeypatch):
    monkeypatch.setenv("INFERBUS_REQUIRE_BROKERS", "1")
    with pytest.raises(pytest.fail.Exception, match="INFERBUS_REQUIRE_BROKERS=1"):
        _missing("no redis-server on PATH")
