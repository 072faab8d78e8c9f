"""Per-function assets: what the bundler finds a handler imports and reads (no pip, no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.constructs.bundling import imported_file, trace_imports
from tests.declared import PIPELINE

BASE = {"POWERTOOLS_SERVICE_NAME": "bundling-test", "POWERTOOLS_METRICS_NAMESPACE": "Test"}
REPO = Path(__file__).resolve().parents[2]
CLAIMS = {"IDEMPOTENCY_TABLE_NAME": "claims", "IDEMPOTENCY_TTL_SECONDS": "3600"}


@pytest.mark.parametrize("consumer", PIPELINE.consumers[:1], ids=lambda c: c.name)
def test_a_consumer_ships_onnxruntime_and_its_own_model_file_only(consumer):
    traced = trace_imports(consumer.handler, BASE | CLAIMS | {
        "INFERBUS_MODELS": ",".join(consumer.models), "EVENT_BUS_NAME": "bus", "RESULT_SOURCE": consumer.result_source,
        "CONSUMES": consumer.accepts.type, "PRODUCES": consumer.result_type})
    distributions = {name.lower().replace("_", "-") for name in traced["distributions"]}
    assert {"onnxruntime", "numpy", "pydantic", "aws-lambda-powertools", "aws-xray-sdk"} <= distributions
    assert "tokenizers" not in distributions
    assert len([f for f in traced["files"] if f.endswith(".onnx")]) == len(consumer.models)


def test_the_accept_step_imports_no_numpy_and_reads_no_model():
    traced = trace_imports("accept_event.handler.lambda_handler", BASE | CLAIMS)
    assert not {"numpy", "onnxruntime", "tokenizers"} & set(traced["distributions"])
    assert traced["files"] == []


def test_a_package_nothing_imported_is_left_out(tmp_path):
    for package in ("lib", "lib/used", "lib/unused", "lib/unused/deep"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    imported = {"lib", "lib.used"}
    assert imported_file(tmp_path, "lib/used/core.py", imported)
    assert imported_file(tmp_path, "lib/libblas.so", imported)  # not in a subpackage: a library the top level loads
    assert not imported_file(tmp_path, "lib/unused/tools.py", imported)
    assert not imported_file(tmp_path, "lib/unused/deep/x.py", imported)
    assert not imported_file(tmp_path, "lib/used/core.pyi", imported)


MANIFEST = json.loads((REPO / "models" / "manifest.json").read_text())["models"]
MODEL_TASKS = [(workflow, stem, task) for workflow in PIPELINE.workflows for stem, task in workflow.tasks.items() if task.models]


@pytest.mark.parametrize(("workflow", "stem", "task"), MODEL_TASKS, ids=[f"{w.name}.{s}" for w, s, _ in MODEL_TASKS])
def test_a_workflow_task_ships_its_own_model_files_and_never_torch(workflow, stem, task):
    """A task whose model was trained with torch (the vision detector) ships none of the build-time tools, and of
    the model files only those it declares (a tokenizer step may read its model's tokenizer and no graph)."""
    traced = trace_imports(task.handler, BASE | {"INFERBUS_MODELS": ",".join(task.models)})
    distributions = {name.lower().replace("_", "-") for name in traced["distributions"]}
    # torch, scikit-learn and onnx build the models; a function only runs them.
    assert not {"torch", "torchvision", "scikit-learn", "scipy", "skl2onnx", "onnx"} & distributions
    graphs = {Path(f).name for f in traced["files"] if f.endswith(".onnx")}
    assert graphs <= {MANIFEST[m]["file"] for m in task.models}
    if graphs:
        assert "onnxruntime" in distributions
