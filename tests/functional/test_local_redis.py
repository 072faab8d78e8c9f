"""The twin's local Redis: a server that answers but refuses the claims' writes is named before anything runs,
in one line saying what to do, and a Redis error met later is one line from the CLI, never "a bug in inferbus".

Each test starts a redis-server of its own (it changes the server's configuration); without one it is
skipped naming the command (CI, ``INFERBUS_REQUIRE_BROKERS=1``: fails instead)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from inferbus.cli_support import FAILED, run_command
from inferbus.runtime.local_redis import prepare
from inferbus.runtime.specs import UnsupportedTemplateError
from tests.redis_server import free_port, start_server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, redis.Redis, Path]]:
    """``(url, client, working folder)`` of a fresh redis-server that saves its snapshot in ``tmp_path/data``."""
    folder = tmp_path / "data"
    folder.mkdir()
    process, port = start_server("--dir", str(folder))
    client = redis.Redis(port=port)
    try:
        yield f"redis://127.0.0.1:{port}", client, folder
    finally:
        process.kill()  # not SIGTERM: a server that cannot save its snapshot refuses to shut down
        process.wait(timeout=10)


def refuse_writes_by_losing_its_folder(client: redis.Redis, folder: Path) -> None:
    """What happened to a redis-server started in a folder since deleted: its next snapshot fails, and from
    then on it answers every write with ``MISCONF``."""
    shutil.rmtree(folder)
    client.bgsave()
    for _ in range(200):
        if client.info("persistence")["rdb_last_bgsave_status"] == "err" and not client.info("persistence")[
                "rdb_bgsave_in_progress"]:
            return
        time.sleep(0.05)
    raise AssertionError("the snapshot did not fail")


def one_line(message: str) -> None:
    assert "\n" not in message and "bug in inferbus" not in message and "Traceback" not in message


def test_a_working_server_is_emptied_of_earlier_claims_only(server):
    url, client, _ = server
    client.set("inferbus:{image-classifier}:stale", b"{}")
    client.set("someone-else", b"kept")
    prepare(url)
    assert client.keys("inferbus:*") == [] and client.get("someone-else") == b"kept"


def test_a_server_that_cannot_save_its_snapshot_is_one_line_saying_how_to_restart_it(server, capsys):
    url, client, folder = server
    refuse_writes_by_losing_its_folder(client, folder)
    with pytest.raises(UnsupportedTemplateError) as refused:
        prepare(url)
    message = str(refused.value)
    one_line(message)
    assert url in message and "MISCONF" in message and "cannot save its snapshot" in message
    assert "cd /tmp && redis-server --daemonize yes" in message

    # The same refusal met mid-run (a claim written after the server broke) reaches the CLI as one line.
    code = run_command("inferbus demo", lambda: client.set("inferbus:{x}:k", b"{}"))
    error = capsys.readouterr().err.strip()
    assert code == FAILED and error.startswith("inferbus demo: the Redis at ") and "cannot save its snapshot" in error
    one_line(error)


@pytest.mark.parametrize(("configure", "expected"), [
    (lambda client: client.replicaof("127.0.0.1", free_port()), "is a read-only replica: point INFERBUS_REDIS_URL"),
    (lambda client: client.config_set("requirepass", "s3cret"), "wants a password"),
    (lambda client: client.config_set("min-replicas-to-write", 1), "refused a request (NOREPLICAS"),
], ids=["replica", "password", "no-replicas"])
def test_every_refusal_of_writes_is_named_before_anything_runs(server, configure, expected):
    url, client, _ = server
    configure(client)
    with pytest.raises(UnsupportedTemplateError) as refused:
        prepare(url)
    message = str(refused.value)
    one_line(message)
    assert message.startswith("the template keeps claims in Redis") and expected in message


def test_no_server_is_one_line_naming_the_command(server):
    with pytest.raises(UnsupportedTemplateError, match=r"no Redis answers at .* start one \(redis-server --daemonize"):
        prepare(f"redis://127.0.0.1:{free_port()}")
