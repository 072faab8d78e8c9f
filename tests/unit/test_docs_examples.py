"""The AWS CLI examples in the README and docs work when pasted: each block runs in bash as written.

`aws` is replaced by a stub that records its arguments, so the test needs neither the AWS CLI nor AWS;
the arguments are then read as the AWS CLI reads them (``file://`` parameters, strict JSON) and every
entry must be an event its contract accepts.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from inferbus_lambda.contracts import from_put_events_entry

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCED = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", re.MULTILINE | re.DOTALL)
STUB = '#!/bin/sh\nfor argument in "$@"; do printf "%s\\0" "$argument"; done >> "$AWS_CALLS"\nprintf "\\n\\0" >> "$AWS_CALLS"\n'


def put_events_blocks() -> list[tuple[str, str]]:
    return [(f"{path.relative_to(ROOT)}#{n}", block) for path in DOCS
            for n, block in enumerate(FENCED.findall(path.read_text())) if "put-events" in block]


def aws_calls(block: str, workdir: Path) -> list[list[str]]:
    """Run ``block`` in bash as a person pasting it would, with ``aws`` recording its arguments."""
    stub_dir = workdir / "bin"
    stub_dir.mkdir()
    (stub_dir / "aws").write_text(STUB)
    (stub_dir / "aws").chmod(0o755)
    calls = workdir / "calls"
    subprocess.run(["bash", "-euc", block], cwd=workdir, check=True, timeout=30,
                   env={"PATH": f"{stub_dir}:/usr/bin:/bin", "AWS_CALLS": str(calls)})
    words = calls.read_bytes().decode().split("\0")[:-1]
    result, current = [], []
    for word in words:
        if word == "\n":
            result.append(current)
            current = []
        else:
            current.append(word)
    return result


def parameter(call: list[str], name: str, workdir: Path) -> str:
    value = call[call.index(name) + 1]
    return (workdir / value.removeprefix("file://")).read_text() if value.startswith("file://") else value


BLOCKS = put_events_blocks()


def test_the_docs_show_a_put_events_example():
    assert BLOCKS, "the README gives an `aws events put-events` example for producers without an SDK"


@pytest.mark.parametrize(("where", "block"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_a_pasted_put_events_example_sends_valid_events(where, block, tmp_path):
    puts = [call for call in aws_calls(block, tmp_path) if call[:2] == ["events", "put-events"]]
    assert puts, f"{where}: the block ran, but no `aws events put-events` call was made"
    for call in puts:
        entries = json.loads(parameter(call, "--entries", tmp_path))  # strict: a raw line break in a string fails
        for entry in entries:
            event = from_put_events_entry(entry)  # Detail parses, and its contract accepts it
            assert (event.source, event.type) == (entry["Source"], entry["DetailType"]), where
