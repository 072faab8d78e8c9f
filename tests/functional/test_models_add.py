"""``inferbus models add PATH.onnx``, through the CLI, in a copy of the kit's package and manifest.

Each model is built here with ``onnx.helper`` (a few nodes), so the cases are exact: a good one, a
fixed batch of 1, an output that drops the batch (declared, or only when run), a string input (the
kit carries strings, as ``new consumer`` does), a bool input (not carried), a corrupt file. A refused
model leaves the manifest and ``models/`` as they were; the error is one line that says what to do.
The last test exports a ``torch.nn.Module`` with ``torch.onnx.export`` where torch is installed (it
is a build-time tool, never a dependency of a function).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

from inferbus.model import Consumer, EventFilter
from inferbus.model.scores import component_scores

REPO = Path(__file__).resolve().parents[2]
OPSET = 17


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The kit's package and the manifest (with its shipped entries) in a folder of their own."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "inferbus", copy / "inferbus", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "models").mkdir()
    for name in ("manifest.json", "manifest_io.py"):
        shutil.copy(REPO / "models" / name, copy / "models" / name)
    return copy


def models_add(project: Path, *argv: object) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(project), str(REPO / "functions")])}
    return subprocess.run([sys.executable, "-m", "inferbus.cli", "models", "add", *map(str, argv)], check=False,
                          cwd=project, env=environment, capture_output=True, text=True, timeout=300)


def manifest(project: Path) -> dict:
    return json.loads((project / "models" / "manifest.json").read_text())


def save(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="test")
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def linear(path: Path, batch: int | str | None = "N", width: int | str = 4, classes: int = 3) -> Path:
    """``x [batch, width] -> MatMul -> Softmax -> probabilities [batch, classes]``."""
    weights = numpy_helper.from_array(np.linspace(-1, 1, 4 * classes, dtype=np.float32).reshape(4, classes), "w")
    return save(helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["logits"]), helper.make_node("Softmax", ["logits"], ["probabilities"])],
        "linear", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, width])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [batch, classes])], [weights]), path)


def first_row(path: Path, declared: list[int | str | None]) -> Path:
    """``x [N, 4] -> Compress(x, [True], axis 0) -> first``: one row, whatever the batch (data-dependent, so
    shape inference cannot see it when the output is declared ``[N, 4]``)."""
    keep = numpy_helper.from_array(np.array([True]), "keep")
    return save(helper.make_graph(
        [helper.make_node("Compress", ["x", "keep"], ["first"], axis=0)], "first_row",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("first", TensorProto.FLOAT, declared)], [keep]), path)


def typed_input(path: Path, element_type: int) -> Path:
    """One input of ``element_type`` ``[N, 1]``, passed through."""
    return save(helper.make_graph(
        [helper.make_node("Identity", ["value"], ["same"])], "typed",
        [helper.make_tensor_value_info("value", element_type, ["N", 1])],
        [helper.make_tensor_value_info("same", element_type, ["N", 1])]), path)


def assert_refused(project: Path, finished: subprocess.CompletedProcess[str], *words: str) -> None:
    """Exit 2, one line on stderr naming the fix, no traceback, nothing written."""
    assert finished.returncode == 2, finished.stdout + finished.stderr
    lines = finished.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in finished.stderr, finished.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert manifest(project) == json.loads((REPO / "models" / "manifest.json").read_text())
    assert sorted(p.name for p in (project / "models").iterdir()) == ["manifest.json", "manifest_io.py"]


def test_a_good_model_is_copied_and_its_entry_holds_sha256_io_benchmark_and_scores(project, tmp_path):
    model = linear(tmp_path / "My_Linear.onnx")
    finished = models_add(project, model, "--scores", "accuracy=0.91", "entity_f1=0.5", "--data", "toy rows")
    assert finished.returncode == 0, finished.stderr
    entry = manifest(project)["models"]["my-linear"]
    copy = project / "models" / entry["file"]
    assert copy.read_bytes() == model.read_bytes()
    import hashlib

    assert entry["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest() and entry["bytes"] == model.stat().st_size
    assert entry["inputs"] == [{"name": "x", "dtype": "float32", "shape": [None, 4]}]
    assert entry["outputs"] == [{"name": "probabilities", "dtype": "float32", "shape": [None, 3]}]
    bench = entry["benchmark"]
    assert bench["batch_1_ms_median"] > 0 and bench["batch_32_ms_median"] > 0 and bench["cpu"]
    assert entry["metrics"]["holdout_accuracy"] == 0.91 and entry["metrics"]["holdout_entity_f1"] == 0.5
    # The scores reach a component that loads the model the way the demo reads them.
    reader = Consumer(name="toy", handler="toy.handler.lambda_handler", accepts=EventFilter("ToySubmitted"),
                      emits="ToyScored", models=("my-linear",))
    assert component_scores(reader, manifest(project)["models"]) == {
        "scores": {"accuracy": 0.91, "entity_f1": 0.5}, "scores_data": "toy rows"}
    # The shipped entries are untouched.
    shipped = json.loads((REPO / "models" / "manifest.json").read_text())["models"]
    assert {name: manifest(project)["models"][name] for name in shipped} == shipped


def test_a_model_whose_weights_are_in_an_external_data_file_is_written_whole(project, tmp_path):
    """As torch.onnx.export writes a large model: the weights in ``.onnx.data`` beside it. The copy in models/
    holds them inside, so it loads on its own (a function's bundle takes the one file the manifest names)."""
    import hashlib

    import onnxruntime as ort

    source = tmp_path / "export"
    source.mkdir()
    model = onnx.load(str(linear(source / "Split_Linear.onnx")))
    onnx.save(model, str(source / "Split_Linear.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="Split_Linear.onnx.data", size_threshold=0)
    assert (source / "Split_Linear.onnx.data").stat().st_size > 0
    finished = models_add(project, source / "Split_Linear.onnx")
    assert finished.returncode == 0, finished.stderr
    assert "holds them inline" in finished.stdout + finished.stderr
    entry = manifest(project)["models"]["split-linear"]
    copy = project / "models" / entry["file"]
    assert sorted(p.name for p in (project / "models").iterdir()) == ["manifest.json", "manifest_io.py", copy.name]
    assert entry["sha256"] == hashlib.sha256(copy.read_bytes()).hexdigest() and entry["bytes"] == copy.stat().st_size
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(copy, alone / "model.onnx")  # nothing beside it
    session = ort.InferenceSession(str(alone / "model.onnx"), providers=["CPUExecutionProvider"])
    (probabilities,) = session.run(None, {"x": np.ones((2, 4), dtype=np.float32)})
    assert probabilities.shape == (2, 3) and np.allclose(probabilities.sum(axis=1), 1)


def test_a_fixed_batch_of_one_is_refused_naming_the_dynamic_first_dimension(project, tmp_path):
    assert_refused(project, models_add(project, linear(tmp_path / "one.onnx", batch=1)), "fixed batch dimension 1",
                   "dynamic first dimension")


def test_an_output_that_drops_the_batch_is_refused_whether_declared_or_only_when_run(project, tmp_path):
    assert_refused(project, models_add(project, first_row(tmp_path / "declared.onnx", [1, 4])), "'first'",
                   "fixed batch dimension 1")
    assert_refused(project, models_add(project, first_row(tmp_path / "hidden.onnx", ["N", 4])), "'first'",
                   "gives 1 rows for a batch of 32")


def test_a_bool_input_is_refused_and_a_string_input_is_carried_as_new_consumer_carries_it(project, tmp_path):
    assert_refused(project, models_add(project, typed_input(tmp_path / "flags.onnx", TensorProto.BOOL)), "'value'",
                   "tensor(bool)")
    finished = models_add(project, typed_input(tmp_path / "words.onnx", TensorProto.STRING))
    assert finished.returncode == 0, finished.stderr
    assert manifest(project)["models"]["words"]["inputs"] == [{"name": "value", "dtype": "string", "shape": [None, 1]}]


def test_a_corrupt_file_and_a_file_that_is_not_onnx_are_refused(project, tmp_path):
    corrupt = tmp_path / "broken.onnx"
    corrupt.write_bytes(b"\x08\x07not a protobuf of a model")
    assert_refused(project, models_add(project, corrupt), "cannot load it")
    assert_refused(project, models_add(project, tmp_path / "missing.onnx"), "no such file")
    other = tmp_path / "model.pt"
    other.write_bytes(b"weights")
    assert_refused(project, models_add(project, other), "give an .onnx file")


def test_a_taken_name_needs_replace_which_makes_a_new_version_and_drops_the_old_scores(project, tmp_path):
    assert_refused(project, models_add(project, linear(tmp_path / "a.onnx"), "--name", "digits-mlp"),
                   "'digits-mlp' already", "--replace")
    finished = models_add(project, linear(tmp_path / "b.onnx", classes=10), "--name", "digits-mlp", "--replace")
    assert finished.returncode == 0, finished.stderr
    before = json.loads((REPO / "models" / "manifest.json").read_text())["models"]["digits-mlp"]
    after = manifest(project)["models"]["digits-mlp"]
    assert after["file"] == before["file"] and after["version"] == "1.0.1"
    assert after["labels"] == before["labels"]  # the user's keys stay; the file's facts are new
    assert after["sha256"] != before["sha256"] and "holdout_accuracy" not in after["metrics"]
    assert "dropped" in finished.stdout


def test_scores_must_be_metric_equals_number_and_come_with_their_data(project, tmp_path):
    model = linear(tmp_path / "scored.onnx")
    assert_refused(project, models_add(project, model, "--scores", "accuracy=high", "--data", "x"), "metric=value")
    assert_refused(project, models_add(project, model, "--scores", "accuracy=0.9"), "--data")


def test_an_open_width_is_benchmarked_on_the_samples_rows(project, tmp_path):
    model = linear(tmp_path / "open.onnx", width="features")
    np.savez(tmp_path / "rows.npz", x=np.ones((5, 4), dtype=np.float32))
    # Without rows the benchmark guesses 16 values per row, which a 4 x 3 MatMul refuses: the error says what to pass.
    assert_refused(project, models_add(project, model, "--name", "open-a"), "--samples", "width of x")
    finished = models_add(project, model, "--name", "open-b", "--samples", tmp_path / "rows.npz")
    assert finished.returncode == 0, finished.stderr
    assert manifest(project)["models"]["open-b"]["benchmark"]["inputs"] == "rows of rows.npz"


def test_a_pytorch_module_exported_with_a_dynamic_batch_axis_is_added(project, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript", reason="torch's ONNX exporter (the default since torch 2.9) needs onnxscript")

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 3)

        def forward(self, x):
            return torch.softmax(self.layer(x), dim=-1)

    path = tmp_path / "tiny_torch.onnx"
    torch.onnx.export(Tiny().eval(), torch.zeros(2, 4), str(path), input_names=["features"],
                      output_names=["probabilities"], opset_version=OPSET,
                      dynamic_axes={"features": {0: "batch"}, "probabilities": {0: "batch"}})
    finished = models_add(project, path, "--scores", "accuracy=0.5", "--data", "nothing, untrained")
    assert finished.returncode == 0, finished.stderr
    entry = manifest(project)["models"]["tiny-torch"]
    assert entry["inputs"] == [{"name": "features", "dtype": "float32", "shape": [None, 4]}]
    assert entry["outputs"][0]["shape"][0] is None
