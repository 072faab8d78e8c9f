"""A synth says each thing once, as a line people can read: no jsii banner bytes, one line per missing tool."""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import sys

import pytest

from infra import JSII_NODE_BANNERS, NODE_END_OF_LIFE, quiet_node_banners
from infra.constructs.bundling import bytecode_interpreter, compile_bytecode

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs node on PATH (make setup installs it)")


def node_major() -> int:
    return int(subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout[1:].split(".")[0])


@needs_node
def test_starting_jsii_prints_no_banner_bytes_once_infra_is_imported(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in JSII_NODE_BANNERS}
    code = "import infra, constructs"  # what the app and the embedded runtime import before aws_cdk
    stderr = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                            timeout=120).stderr
    assert "b'" not in stderr and 'b"' not in stderr, stderr
    assert len(stderr.splitlines()) <= 1, stderr


@needs_node
def test_an_end_of_life_node_is_one_line_unless_the_user_said_they_know(monkeypatch, capsys):
    for name in JSII_NODE_BANNERS:
        monkeypatch.delenv(name, raising=False)
    major = node_major()
    end = NODE_END_OF_LIFE.get(major, datetime.date(2000, 1, 1))
    line = quiet_node_banners(today=end + datetime.timedelta(days=1))
    if major in NODE_END_OF_LIFE:
        assert f"Node {major} reached its end of life on {end}" in line
    assert all(os.environ[name] == str(major) for name in JSII_NODE_BANNERS)  # jsii's own banners: silenced

    for name in JSII_NODE_BANNERS:
        monkeypatch.delenv(name)
    assert quiet_node_banners(today=end - datetime.timedelta(days=1)) is None  # still supported: nothing to say
    for name in JSII_NODE_BANNERS[1:]:
        monkeypatch.delenv(name)
    assert quiet_node_banners(today=end + datetime.timedelta(days=365)) is None  # JSII_..._END_OF_LIFE set: known
    assert capsys.readouterr().err == ""  # importing infra or asking prints nothing: the synth prints the line


def test_a_missing_lambda_python_is_said_once_per_synth_not_per_function(tmp_path, capsys):
    bytecode_interpreter.cache_clear()
    for function in range(5):
        (tmp_path / str(function)).mkdir()
        assert compile_bytecode(tmp_path / str(function), "2.9") is False  # no python2.9 anywhere
    assert capsys.readouterr().err.count("no python2.9 on this machine") == 1
    bytecode_interpreter.cache_clear()
