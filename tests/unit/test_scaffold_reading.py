"""The scaffold reading what it is given: ONNX graphs (each common kind of export), held-out
samples in three formats, and the names it derives. Nothing is written."""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

import numpy as np
import pytest

import inferbus.scaffold.names
from inferbus.scaffold import ScaffoldError
from inferbus.scaffold.graph import open_session, read_graph, read_inputs, with_widths
from inferbus.scaffold.names import check_component_name, identifier
from inferbus.scaffold.samples import read_samples

FIXTURES = Path(__file__).resolve().parents[1] / "scaffold_fixtures"


def graph_of(name: str, samples: str | None = None):
    path = FIXTURES / name
    session = open_session(path)
    inputs = read_inputs(session)
    held_out = read_samples(FIXTURES / samples, inputs) if samples else None
    inputs = with_widths(inputs, held_out.widths if held_out else {})
    held_out = read_samples(FIXTURES / samples, inputs) if samples else None
    graph = read_graph(session, inputs, samples=held_out.inputs if held_out else None,
                       sample_labels=list(held_out.labels) if held_out and held_out.labels is not None else None,
                       path=path)
    return graph, held_out


def test_the_naming_examples_run():
    result = doctest.testmod(inferbus.scaffold.names)
    assert result.failed == 0 and result.attempted >= 1


# -- names ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "says"), [
    ("Iris", "kebab-case"), ("iris_classifier", "kebab-case"), ("-iris", "kebab-case"), ("x" * 41, "kebab-case"),
    ("image-classifier", "already declared"), ("json", "hides an existing one"), ("class", "hides an existing one"),
])
def test_a_component_name_is_kebab_case_new_and_hides_no_module(name, says):
    with pytest.raises(ScaffoldError, match=says):
        check_component_name(name, declared={"image-classifier"})


def test_graph_names_become_identifiers_pydantic_accepts():
    assert [identifier(n) for n in ("float_input", "input.1", "X", "2d", "output:0", "model_dump_x", "json", "")] == [
        "float_input", "input_1", "x", "input_2d", "output_0", "graph_model_dump_x", "json_", "value"]


# -- graphs -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("graph", "task", "fields", "outputs", "labels"), [
    ("iris-zipmap.onnx", "classifier", [("features", "float", 4)], ["label", "probabilities"], (0, 1, 2)),
    ("iris-tensor.onnx", "classifier", [("features", "float", 4)], ["label", "probabilities"], (0, 1, 2)),
    ("counts.onnx", "classifier", [("counts", "int", 4)], ["label", "probabilities"], (0, 1, 2)),
    ("diabetes-ridge.onnx", "regressor", [("features", "float", 10)], ["prediction"], None),
    ("two-targets.onnx", "regressor", [("features", "float", 10)], ["prediction"], None),
    ("two-inputs.onnx", "regressor", [("a", "float", 2), ("b", "float", 3)], ["prediction"], None),
    ("image-like.onnx", "generic", [("pixels", "float", 4)], ["embedding", "flag", "norm"], None),
    ("review-text.onnx", "classifier", [("text", "str", 1)], ["label", "probabilities"], ("negative", "positive")),
])
def test_each_kind_of_export_maps_to_fields(graph, task, fields, outputs, labels):
    spec, _ = graph_of(graph)
    assert spec.task == task
    assert [(i.field, i.kind, i.width) for i in spec.inputs] == fields
    assert [o.field for o in spec.outputs] == outputs
    assert spec.labels == labels
    if task == "classifier":
        assert spec.distribution and spec.classes == len(labels)


def test_a_zipmap_is_read_as_a_probability_row_per_input():
    spec, _ = graph_of("iris-zipmap.onnx")
    assert spec.score_output.zipmap and spec.score_output.width == 3
    assert spec.score_output.manifest()["dtype"].startswith("seq(map(")


def test_class_names_come_from_the_graph_or_else_from_the_samples(monkeypatch):
    spec, _ = graph_of("wine-names.onnx")
    assert spec.labels == ("barbera", "barolo", "grignolino") and spec.label_output.kind == "str"
    monkeypatch.setitem(sys.modules, "onnx", None)  # no onnx to read the graph's nodes with
    spec, _ = graph_of("wine-names.onnx", "wine-holdout.csv")
    assert spec.labels == ("barbera", "barolo", "grignolino")
    spec, _ = graph_of("wine-names.onnx")
    assert spec.labels is None  # nothing shows them: the contract takes any label


def test_a_flattened_input_keeps_the_graphs_shape_for_the_handler():
    spec, _ = graph_of("image-like.onnx")
    (pixels,) = spec.inputs
    assert pixels.record_shape == (1, 2, 2) and pixels.width == 4 and pixels.flat


def test_an_open_width_is_read_from_the_samples():
    with pytest.raises(ScaffoldError, match="pass --samples FILE"):
        graph_of("open-width.onnx")
    spec, held_out = graph_of("open-width.onnx", "iris-holdout.npz")
    assert spec.inputs[0].width == 4 and held_out.rows == 30


@pytest.mark.parametrize(("path", "says"), [
    (FIXTURES / "fixed-batch.onnx", "fixed batch dimension 1"),
    (FIXTURES / "missing.onnx", "no such file"),
    (FIXTURES / "wine-holdout.csv", "cannot load it"),
])
def test_a_graph_that_cannot_be_mapped_is_one_clear_error(path, says):
    with pytest.raises(ScaffoldError, match=says) as raised:
        read_graph(open_session(path))
    assert "\n" not in str(raised.value)


# -- samples ----------------------------------------------------------------------------------------

def test_the_three_sample_formats_are_read_with_their_labels():
    inputs = read_inputs(open_session(FIXTURES / "iris-zipmap.onnx"))
    iris = read_samples(FIXTURES / "iris-holdout.npz", inputs)
    assert (iris.format, iris.rows, iris.truth_kind, iris.keys) == ("npz", 30, "int", {"X": "inputs"})
    wine = read_samples(FIXTURES / "wine-holdout.csv", read_inputs(open_session(FIXTURES / "wine-names.onnx")))
    assert (wine.rows, wine.truth_kind, wine.header, wine.keys, wine.label_key) == (20, "str", True, {"X": "0:13"},
                                                                                    "13")
    ridge = read_inputs(open_session(FIXTURES / "diabetes-ridge.onnx"))
    diabetes = read_samples(FIXTURES / "diabetes-holdout.jsonl", ridge)
    assert (diabetes.rows, diabetes.truth_kind, diabetes.inputs["X"].shape) == (20, "int", (20, 10))  # whole targets


def test_samples_that_do_not_fit_the_model_are_refused(tmp_path):
    inputs = read_inputs(open_session(FIXTURES / "iris-zipmap.onnx"))
    with pytest.raises(ScaffoldError, match="takes 4 values per sample, the file has 10"):
        read_samples(FIXTURES / "diabetes-holdout.jsonl", inputs)
    nan = tmp_path / "nan.npz"
    np.savez(nan, inputs=np.array([[1.0, np.nan, 2.0, 3.0]]))
    with pytest.raises(ScaffoldError, match="NaN or infinite"):
        read_samples(nan, inputs)
    other = tmp_path / "samples.parquet"
    other.write_text("x")
    with pytest.raises(ScaffoldError, match="use a .npz, .csv or .jsonl"):
        read_samples(other, inputs)




def test_an_existing_event_type_s_field_is_read_in_its_contract_s_kind():
    """A float model input carried by an existing int field (digit pixels) is read and written as ints, so the
    demo samples validate against the contract; the feed is cast to the graph's dtype at inference."""
    from inferbus_lambda.contracts import data_model

    from inferbus.scaffold.consumer import _map_existing

    models = Path(__file__).resolve().parents[2] / "models"
    inputs = read_inputs(open_session(models / "digits-mlp.onnx"))
    assert {graph_input.kind for graph_input in inputs} == {"float"}
    mapped, widths, _ = _map_existing(data_model("ImageSubmitted"), inputs, "ImageSubmitted")
    assert [(graph_input.field, graph_input.kind) for graph_input in mapped] == [("pixels", "int")]
    held_out = read_samples(models / "digits-holdout.npz", with_widths(mapped, widths))
    pixels = held_out.inputs[mapped[0].name][0]
    assert data_model("ImageSubmitted").model_validate({"pixels": [int(v) for v in pixels]}).pixels


def test_a_model_keeping_its_weights_beside_it_is_told_from_one_holding_them(tmp_path):
    """What `new consumer` refuses (naming `inferbus models add`, which writes it whole) and `models add` inlines."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from inferbus.scaffold.graph import keeps_external_data

    weights = numpy_helper.from_array(np.ones((4, 2), dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], [weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(tmp_path / "whole.onnx"))
    onnx.save(model, str(tmp_path / "split.onnx"), save_as_external_data=True, location="split.onnx.data",
              size_threshold=0)
    assert not keeps_external_data(tmp_path / "whole.onnx")
    assert keeps_external_data(tmp_path / "split.onnx")
