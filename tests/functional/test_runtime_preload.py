"""The modules the twin preloads while Node synthesizes are ones a start of the twin imports anyway."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from inferbus.runtime.preload import PRELOADED
from tests.runtime_fixtures import REPO_ROOT

START = """
import json, sys
template = json.load(open(sys.argv[1]))
from inferbus.local import LocalPipeline
before = set(sys.modules)
with LocalPipeline(template, tap=False):
    pass
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_every_preloaded_module_is_one_a_start_imports(template, tmp_path):
    path = tmp_path / "template.json"
    path.write_text(json.dumps(template))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "functions")])}
    answer = subprocess.run([sys.executable, "-c", START, str(path)], env=env, capture_output=True, text=True,
                            check=True, timeout=300)
    imported = set(json.loads(answer.stdout.strip().splitlines()[-1]))
    assert set(PRELOADED) <= imported, sorted(set(PRELOADED) - imported)  # a fresh start, no preload: the same names
