"""Classifiers from logits: which one-output models the scaffold reads as classifiers, the labels it
gives them, the probabilities the generated handler computes, the accuracy it records, and the
``VALUE_LIMIT`` it writes. Nothing is written."""

from __future__ import annotations

import doctest
import sys

import numpy as np
import pytest

import inferbus.scaffold.heads
from inferbus.scaffold import ScaffoldError
from inferbus.scaffold.codegen import SIGMOID, SOFTMAX
from inferbus.scaffold.consumer import VALUE_LIMIT, _accuracy, _value_limit
from inferbus.scaffold.graph import open_session, read_graph, read_inputs
from inferbus.scaffold.heads import choose_head, class_probabilities, head_labels, held_out_accuracy, parse_labels
from inferbus.scaffold.samples import read_samples
from tests.unit.test_scaffold_reading import FIXTURES


def test_the_examples_run():
    result = doctest.testmod(inferbus.scaffold.heads)
    assert result.failed == 0 and result.attempted >= 3


# -- the rule ---------------------------------------------------------------------------------------

def head(name: str, columns: int, *, op: str | None = None, distribution: bool = False, truths=None, labels=None,
         task=None) -> str | None:
    return choose_head(name, columns, final_op=op, distribution=distribution, sample_labels=truths, labels=labels,
                       task=task)[0]


@pytest.mark.parametrize(("name", "columns", "evidence", "expected"), [
    ("logits", 3, {}, "logits"),
    ("classLogits", 10, {}, "logits"),
    ("output_probability", 3, {"distribution": True}, "probabilities"),
    ("probabilities", 3, {}, "logits"),  # the name says classes; rows that do not sum to 1 get a softmax
    ("scores", 3, {}, "logits"),
    ("output", 3, {"op": "Softmax"}, "probabilities"),
    ("output", 3, {"op": "LogSoftmax"}, "logits"),  # log-probabilities: a softmax gives them back
    ("output", 3, {"distribution": True}, "probabilities"),
    ("output", 3, {"truths": ["a", "b", "a"]}, "logits"),
    ("output", 3, {"truths": [0.0, 2.0, 1.0]}, "logits"),
    ("output", 3, {}, None),  # nothing says classes: K regression targets
    ("output", 3, {"truths": [12.5, 3.0]}, None),  # a fraction is no class
    ("output", 3, {"truths": [0, 3]}, None),  # 3 is no index of 3 columns
    ("output", 1, {"op": "Sigmoid"}, "probability"),
    ("logit", 1, {}, "logit"),
    ("risk_score", 1, {}, None),  # one column: "score" alone is a regressor's word too
    ("output", 1, {"truths": [0, 1, 1]}, None),  # one column: samples alone do not make a class
    ("output", 3, {"task": "classifier"}, "logits"),
    ("output", 1, {"task": "classifier"}, "logit"),
    ("logits", 3, {"task": "regressor"}, None),  # --task always wins
    ("output", 2, {"labels": ("no", "yes")}, "logits"),
])
def test_one_float_output_is_class_scores_only_on_evidence(name, columns, evidence, expected):
    assert head(name, columns, **evidence) == expected


def test_the_reading_is_one_line_naming_the_flag_that_changes_it():
    _, regressor = choose_head("output", 3, final_op=None, distribution=False, sample_labels=None, labels=None,
                               task=None)
    _, classifier = choose_head("logits", 3, final_op=None, distribution=False, sample_labels=None, labels=None,
                                task=None)
    assert "3 regression targets" in regressor and "--task classifier" in regressor and "\n" not in regressor
    assert "class logits" in classifier and "--task regressor" in classifier
    assert choose_head("logits", 3, final_op=None, distribution=False, sample_labels=None, labels=None,
                       task="classifier")[1] is None  # a flag chose: nothing to say


def test_labels_come_from_the_flag_else_the_samples_else_the_class_indices():
    assert head_labels("logits", 3, ("x", "y", "z"), ["a"]) == (("x", "y", "z"), None)
    assert head_labels("logits", 3, None, ["straw", "amber", "ruby", "amber"])[0] == ("amber", "ruby", "straw")
    assert head_labels("logits", 3, None, [2.0, 0.0]) == ((0, 1, 2), None)
    labels, note = head_labels("logits", 3, None, None)
    assert labels == ("0", "1", "2") and "--labels" in note
    assert head_labels("logit", 1, None, [0, 1])[0] == (0, 1)  # one column: binary


@pytest.mark.parametrize(("columns", "labels", "truths", "says"), [
    (3, ("a", "b"), None, "--labels gives 2 classes but the model scores 3"),
    (1, ("a", "b", "c"), None, "the negative class first"),
    (3, None, ["a", "b", "c", "d"], "4 distinct labels but the model scores 3"),
    (3, None, [0, 7], "not class indices 0..2"),
])
def test_labels_that_cannot_be_the_models_classes_are_one_clear_error(columns, labels, truths, says):
    with pytest.raises(ScaffoldError, match=says) as raised:
        head_labels("logit" if columns == 1 else "logits", columns, labels, truths)
    assert "\n" not in str(raised.value)


def test_labels_flag_is_parsed_as_names_or_whole_numbers():
    assert parse_labels("setosa,versicolor, virginica") == ("setosa", "versicolor", "virginica")
    assert parse_labels("0,1,2") == (0, 1, 2)
    for bad in ("a,,b", "a,b,a"):
        with pytest.raises(ScaffoldError):
            parse_labels(bad)


# -- the graphs -------------------------------------------------------------------------------------

def read(name: str, samples: str | None = None, **flags):
    path = FIXTURES / name
    session = open_session(path)
    inputs = read_inputs(session)
    held_out = read_samples(FIXTURES / samples, inputs) if samples else None
    truths = list(held_out.labels) if held_out is not None and held_out.labels is not None else None
    return read_graph(session, inputs, samples=held_out.inputs if held_out else None, sample_labels=truths,
                      path=path, **flags)


def test_a_logits_only_model_is_a_classifier_with_label_probability_and_scores():
    spec = read("blobs-logits.onnx")
    assert (spec.task, spec.head, spec.labels, spec.classes) == ("classifier", "logits", ("0", "1", "2"), 3)
    assert [o.field for o in spec.outputs] == ["scores"] and spec.label_output is None
    named = read("blobs-output.onnx", "blobs-holdout.csv")  # the output's name says nothing; the samples do
    assert (named.task, named.head, named.labels) == ("classifier", "logits", ("amber", "ruby", "straw"))
    assert any("the samples' labels are classes" in line for line in named.reading)


def test_the_same_model_is_a_regressor_when_told_or_when_nothing_says_classes():
    told = read("blobs-logits.onnx", task="regressor")
    assert (told.task, [o.field for o in told.outputs], told.head) == ("regressor", ["prediction"], None)
    unmarked = read("blobs-output.onnx")
    assert unmarked.task == "regressor" and "--task classifier" in unmarked.reading[0]
    forced = read("blobs-output.onnx", task="classifier", labels=("a", "b", "c"))
    assert (forced.task, forced.labels) == ("classifier", ("a", "b", "c"))


def test_a_sigmoid_ended_binary_model_is_a_two_class_classifier(monkeypatch):
    spec = read("blobs-sigmoid.onnx", "blobs-binary-holdout.npz")
    assert (spec.task, spec.head, spec.labels, spec.classes) == ("classifier", "probability", (0, 1), 2)
    monkeypatch.setitem(sys.modules, "onnx", None)  # no onnx: the Sigmoid node cannot be seen
    assert read("blobs-sigmoid.onnx", "blobs-binary-holdout.npz").task == "regressor"
    told = read("blobs-sigmoid.onnx", "blobs-binary-holdout.npz", task="classifier")
    assert told.head == "logit"  # nothing says the sigmoid is in the graph: the handler applies one


@pytest.mark.parametrize(("graph", "flags", "says"), [
    ("blobs-logits.onnx", {"labels": ("a", "b")}, "--labels gives 2 classes but the model scores 3"),
    ("iris-tensor.onnx", {"task": "regressor"}, "outputs a label"),
    ("iris-tensor.onnx", {"labels": ("a", "b", "c")}, "drop --labels"),
    ("image-like.onnx", {"task": "classifier"}, "ONE float output of scores"),
])
def test_flags_that_do_not_fit_the_graph_are_one_clear_error(graph, flags, says):
    with pytest.raises(ScaffoldError, match=says) as raised:
        read(graph, **flags)
    assert "\n" not in str(raised.value)


# -- what the generated handler computes ------------------------------------------------------------

def generated(source: str, name: str):
    namespace = {"np": np}
    exec(source, namespace)  # noqa: S102 - the helper exactly as the scaffold writes it into the handler
    return namespace[name]


def test_the_generated_softmax_is_stable_for_huge_logits():
    softmax = generated(SOFTMAX, "softmax")
    rows = softmax(np.array([[1000.0, -1000.0, 999.0], [0.0, 0.0, 0.0], [-800.0, -801.0, -5000.0]]))
    assert np.all(np.isfinite(rows)) and np.allclose(rows.sum(axis=1), 1.0)
    assert rows[0].argmax() == 0 and rows[0][0] == pytest.approx(1 / (1 + np.exp(-1.0)))
    assert np.allclose(rows[1], 1 / 3)
    assert np.allclose(softmax(np.array([[1.0, 2.0, 3.0]])), class_probabilities("logits", np.array([[1.0, 2.0, 3.0]])))


def test_the_generated_sigmoid_is_stable_at_both_tails():
    sigmoid = generated(SIGMOID, "sigmoid")
    values = sigmoid(np.array([-1000.0, 0.0, 1000.0, 2.0]))
    assert np.all(np.isfinite(values)) and values[0] == 0.0 and values[1] == 0.5 and values[2] == 1.0
    assert values[3] == pytest.approx(1 / (1 + np.exp(-2.0)))


# -- accuracy and VALUE_LIMIT -----------------------------------------------------------------------

def test_the_accuracy_is_measured_on_every_labelled_sample_beside_the_majority_class():
    session = open_session(FIXTURES / "blobs-output.onnx")
    inputs = read_inputs(session)
    held_out = read_samples(FIXTURES / "blobs-holdout.csv", inputs)
    spec = read("blobs-output.onnx", "blobs-holdout.csv")
    measured = _accuracy(session, spec, held_out)
    logits = session.run(None, {"input": held_out.inputs["input"].astype(np.float32)})[0]
    expected = np.mean([spec.labels[k] == truth for k, truth in zip(logits.argmax(axis=1), held_out.labels)])
    assert measured.accuracy == pytest.approx(expected) and measured.size == 30 and measured.accuracy >= 0.9
    counts = {label: list(held_out.labels).count(label) for label in spec.labels}
    assert measured.majority_accuracy == max(counts.values()) / 30
    metrics = measured.metrics("x.csv", "c", "onnxruntime")
    assert metrics["holdout_accuracy"] == round(expected, 4) and metrics["holdout_majority_baseline"] < 0.5


def test_class_index_truths_are_compared_with_named_labels_by_index():
    measured = held_out_accuracy(["a", "b", "c"], [0, 1, 1], ("a", "b", "c"))
    assert measured is not None and measured.accuracy == pytest.approx(2 / 3)
    assert held_out_accuracy(["a"], [None], ("a",)) is None


def test_value_limit_is_ten_times_the_samples_largest_magnitude(tmp_path):
    samples = tmp_path / "wine.csv"
    rows = ["x0,x1,x2,x3,x4,x5,x6,x7,x8,x9,x10,x11,x12,label",
            "14.2,1.7,2.4,15.6,127,2.8,3.06,0.28,2.29,5.64,1.04,3.92,1065,amber",
            "13.2,1.78,2.14,11.2,100,2.65,2.76,0.26,1.28,4.38,1.05,3.4,1680,ruby",
            "12.4,-1.9,2.0,19.0,90,1.6,0.8,0.5,1.1,3.1,0.7,1.6,520,straw"]
    samples.write_text("\n".join(rows) + "\n")
    held_out = read_samples(samples, read_inputs(open_session(FIXTURES / "blobs-logits.onnx")))
    assert float(np.abs(held_out.inputs["input"]).max()) == 1680
    assert _value_limit(held_out) == 16_800
    assert _value_limit(None) == VALUE_LIMIT == 1_000_000
    small = tmp_path / "small.csv"
    small.write_text(",".join(["0.0123"] * 13) + "\n")
    assert _value_limit(read_samples(small, read_inputs(open_session(FIXTURES / "blobs-logits.onnx")))) == 1
