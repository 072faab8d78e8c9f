"""A short burst from bench/serve_throughput.py against ``inferbus serve`` (every declared component's demo
inputs, valid, invalid and foreign, put as fast as one client can): every ledger balances and every queue drains.
No assertion on speed: the rates and the ratio against the baseline are the bench's to print."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.declared import DEMO

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
EVENTS = 120


@pytest.fixture(scope="module")
def burst(template, tmp_path_factory):
    path = tmp_path_factory.mktemp("throughput") / "template.json"
    path.write_text(json.dumps(template))
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "serve_throughput.py"), "--events", str(EVENTS),
                           "--valid", "8", "--invalid", "1", "--foreign", "1", "--settle", "120", "--template", str(path),
                           "--no-baseline", "--json"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.stdout.strip(), done.stderr
    (side,) = json.loads(done.stdout.splitlines()[-1])
    return side, done


def test_a_burst_balances_every_ledger_and_drains_every_queue(burst):
    side, done = burst
    assert side["events"] == EVENTS and all(side["kinds"].values()), side["kinds"]  # each kind was sent
    assert {key: value for key, value in side["missing"].items() if key != "routed_on"} == {
        "valid_without_result": 0, "valid_failed": 0, "routed_without_outcome": 0, "invalid_not_kept": 0,
        "foreign_not_arrived": 0, "foreign_kept_as_invalid": 0, "duplicate_results": 0}
    assert side["queues_left"] == {} and side["balanced"] and done.returncode == 0
    assert side["settled_after_s"] is not None  # balanced within --settle


def test_every_demo_component_had_inputs_in_the_burst(burst):
    side, _ = burst
    assert DEMO and side["kinds"]["valid"] >= len(DEMO)  # the traffic goes round every declared demo component


def test_an_unknown_component_is_refused_in_one_line_before_a_server_starts():
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "serve_throughput.py"), "--components", "vision-fanout,nope",
                           "--no-baseline"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no component with demo inputs is named nope: choose from" in done.stderr.splitlines()[-1]
    assert all(name in done.stderr for name in DEMO)  # what it can be
