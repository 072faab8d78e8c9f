"""Build the small ONNX graphs and sample files the scaffold's tests read (``make models`` extras needed).

Run ``.venv/bin/python tests/scaffold_fixtures/build_graphs.py`` after ``pip install -e '.[models]'``;
the outputs are committed (a few kB), so the tests need only onnxruntime. Each graph stands for
one kind of export the scaffold must map:

======================  ===========================================================================
file                    what it is
======================  ===========================================================================
iris-zipmap.onnx        skl2onnx LogisticRegression, default export: label + ZipMap, int classes
iris-tensor.onnx        the same with ``zipmap=False``: label + probabilities [N, 3]
wine-names.onnx         string class names, ``zipmap=False`` (labels only in the graph's nodes)
diabetes-ridge.onnx     a regressor: one float output [N, 1]
two-targets.onnx        a regressor with two targets: [N, 2]
open-width.onnx         a classifier whose input is declared [N, None]
counts.onnx             int64 input [N, 4]
two-inputs.onnx         onnx.helper: inputs a [N, 2] and b [N, 3] -> concat -> sum: [N, 1]
image-like.onnx         onnx.helper: input [N, 1, 2, 2] -> outputs embedding [N, 4], flag [N], norm [N]
fixed-batch.onnx        onnx.helper: input [1, 3] (a batch of exactly one: refused)
review-text.onnx        a text classifier: string input [N, 1] -> TF-IDF -> class names (``locale`` C)
blobs-logits.onnx       onnx.helper, PyTorch-style: input [batch, 13] -> standardize -> Gemm -> ``logits``
                        [batch, 3], no softmax (trained in numpy on synthetic rows, see ``logits_graphs``)
blobs-output.onnx       the same weights, the output named ``output`` (nothing in the graph says "classes")
blobs-sigmoid.onnx      onnx.helper: input [batch, 13] -> standardize -> Gemm -> Sigmoid -> ``output``
                        [batch, 1], a binary classifier (is the row ``ruby``?)
iris-holdout.npz        30 held-out iris rows (``inputs``, ``labels``)
wine-holdout.csv        held-out wine rows with a header and a ``label`` column (class names)
diabetes-holdout.jsonl  held-out rows ``{"features": [...], "label": target}``
blobs-holdout.csv       30 held-out synthetic rows with a header and a ``label`` column (amber, ruby, straw)
blobs-binary-holdout.npz  the same 30 rows (``inputs``) with binary labels (``labels``: 1 for ruby)
======================  ===========================================================================

``python build_graphs.py logits`` builds only the ``blobs-*`` files: they need numpy and onnx,
not scikit-learn.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = Path(__file__).resolve().parent
OPSET = {"": 17, "ai.onnx.ml": 3}


def save(model: onnx.ModelProto, name: str) -> None:
    (HERE / name).write_bytes(model.SerializeToString())


def helper_graph(name: str, nodes: list, inputs: list, outputs: list) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnx.helper")


def sklearn_and_helper_graphs() -> None:
    from skl2onnx import convert_sklearn, to_onnx
    from skl2onnx.common.data_types import FloatTensorType, Int64TensorType, StringTensorType
    from sklearn.datasets import load_diabetes, load_iris, load_wine
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline

    features, labels = load_iris(return_X_y=True)
    train_x, test_x, train_y, test_y = train_test_split(features.astype(np.float32), labels, test_size=0.2,
                                                        random_state=7, stratify=labels)
    iris = LogisticRegression(max_iter=1000).fit(train_x, train_y)
    save(to_onnx(iris, train_x[:1], target_opset=OPSET), "iris-zipmap.onnx")
    save(to_onnx(iris, train_x[:1], target_opset=OPSET, options={"zipmap": False}), "iris-tensor.onnx")
    save(convert_sklearn(iris, initial_types=[("input", FloatTensorType([None, None]))], target_opset=OPSET),
         "open-width.onnx")
    np.savez(HERE / "iris-holdout.npz", inputs=test_x, labels=test_y.astype(np.int64))
    counts = LogisticRegression(max_iter=1000).fit((train_x * 10).astype(np.int64), train_y)
    save(convert_sklearn(counts, initial_types=[("counts", Int64TensorType([None, 4]))], target_opset=OPSET,
                         options={"zipmap": False}), "counts.onnx")

    wine_x, wine_y = load_wine(return_X_y=True)
    names = np.array(["barolo", "grignolino", "barbera"])
    train_x, test_x, train_y, test_y = train_test_split(wine_x.astype(np.float32), names[wine_y], test_size=0.2,
                                                        random_state=7, stratify=wine_y)
    wine = LogisticRegression(max_iter=5000).fit(train_x, train_y)
    save(to_onnx(wine, train_x[:1], target_opset=OPSET, options={"zipmap": False}), "wine-names.onnx")
    with (HERE / "wine-holdout.csv").open("w") as handle:
        handle.write(",".join([f"x{i}" for i in range(13)] + ["label"]) + "\n")
        for row, label in zip(test_x[:20], test_y[:20], strict=True):
            handle.write(",".join(f"{float(v):.4g}" for v in row) + f",{label}\n")

    diabetes_x, diabetes_y = load_diabetes(return_X_y=True)
    diabetes_x = diabetes_x.astype(np.float32)
    save(to_onnx(Ridge().fit(diabetes_x[40:], diabetes_y[40:]), diabetes_x[:1], target_opset=OPSET),
         "diabetes-ridge.onnx")
    both = np.c_[diabetes_y, diabetes_y / 2]
    save(to_onnx(LinearRegression().fit(diabetes_x, both), diabetes_x[:1], target_opset=OPSET), "two-targets.onnx")
    with (HERE / "diabetes-holdout.jsonl").open("w") as handle:
        for row, target in zip(diabetes_x[:20], diabetes_y[:20], strict=True):
            handle.write(json.dumps({"features": [round(float(v), 6) for v in row], "label": float(target)}) + "\n")

    texts = ["good and fine", "awful, poor", "great service", "poor service", "fine and good", "bad and awful"] * 3
    reviews = make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(texts, ["positive", "negative"] * 9)
    save(convert_sklearn(reviews, initial_types=[("text", StringTensorType([None, 1]))], target_opset=OPSET,
                         options={LogisticRegression: {"zipmap": False}, TfidfVectorizer: {"locale": "C"}}),
         "review-text.onnx")

    float_input = TensorProto.FLOAT
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    save(helper_graph("two_inputs", [
        helper.make_node("Concat", ["a", "b"], ["ab"], axis=1),
        helper.make_node("Constant", [], ["axes"], value=axes),
        helper.make_node("ReduceSum", ["ab", "axes"], ["total"], keepdims=1),
    ], [helper.make_tensor_value_info("a", float_input, ["N", 2]), helper.make_tensor_value_info("b", float_input, ["N", 3])],
        [helper.make_tensor_value_info("total", float_input, ["N", 1])]), "two-inputs.onnx")
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 4])
    save(helper_graph("image_like", [
        helper.make_node("Constant", [], ["shape"], value=shape),
        helper.make_node("Reshape", ["pixels", "shape"], ["embedding"]),
        helper.make_node("ArgMax", ["embedding"], ["flag"], axis=1, keepdims=0),
        helper.make_node("ReduceL2", ["pixels"], ["norm"], axes=[1, 2, 3], keepdims=0),
    ], [helper.make_tensor_value_info("pixels", float_input, [None, 1, 2, 2])],
        [helper.make_tensor_value_info("embedding", float_input, [None, 4]),
         helper.make_tensor_value_info("flag", TensorProto.INT64, [None]),
         helper.make_tensor_value_info("norm", float_input, [None])]), "image-like.onnx")
    save(helper_graph("fixed_batch", [helper.make_node("Identity", ["x"], ["y"])],
                      [helper.make_tensor_value_info("x", float_input, [1, 3])],
                      [helper.make_tensor_value_info("y", float_input, [1, 3])]), "fixed-batch.onnx")


BLOB_NAMES = ("amber", "ruby", "straw")  # sorted: the class order of the logits
# Each feature's typical magnitude, wine-like: the last one runs past 1,000 (VALUE_LIMIT is read from the samples).
BLOB_SCALES = np.array([13, 2.3, 2.4, 19, 100, 2.3, 2.0, 0.36, 1.6, 5.0, 0.96, 2.6, 750], dtype=np.float64)


def _fit_linear(x: np.ndarray, targets: np.ndarray, *, softmax: bool, steps: int = 2000, rate: float = 0.5) -> tuple[
        np.ndarray, np.ndarray]:
    """Weights and bias of a linear head by full-batch gradient descent on the cross-entropy (softmax over the
    columns, or a sigmoid per column): what a small PyTorch model would learn, without PyTorch."""
    weights, bias = np.zeros((x.shape[1], targets.shape[1])), np.zeros(targets.shape[1])
    for _ in range(steps):
        logits = x @ weights + bias
        if softmax:
            shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
            predicted = shifted / shifted.sum(axis=1, keepdims=True)
        else:
            predicted = 1 / (1 + np.exp(-logits))
        gradient = (predicted - targets) / len(x)
        weights -= rate * (x.T @ gradient + 1e-3 * weights)
        bias -= rate * gradient.sum(axis=0)
    return weights, bias


def _linear_head(name: str, mean: np.ndarray, std: np.ndarray, weights: np.ndarray, bias: np.ndarray, output: str,
                 *, sigmoid: bool = False) -> onnx.ModelProto:
    """input [batch, 13] -> (x - mean) / std -> Gemm -> ``output`` (through a Sigmoid if asked), as torch.onnx
    exports a ``nn.Linear`` behind a normalization."""
    def constant(tensor_name: str, values: np.ndarray) -> onnx.NodeProto:
        tensor = helper.make_tensor(tensor_name, TensorProto.FLOAT, values.shape, values.astype(np.float32).ravel())
        return helper.make_node("Constant", [], [tensor_name], value=tensor)

    nodes = [constant("mean", mean), constant("std", std), constant("weight", weights), constant("bias", bias),
             helper.make_node("Sub", ["input", "mean"], ["centred"]),
             helper.make_node("Div", ["centred", "std"], ["scaled"]),
             helper.make_node("Gemm", ["scaled", "weight", "bias"], ["linear" if sigmoid else output])]
    if sigmoid:
        nodes.append(helper.make_node("Sigmoid", ["linear"], [output]))
    return helper_graph(name, nodes, [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 13])],
                        [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", weights.shape[1]])])


def logits_graphs() -> None:
    """Classifiers that end in logits or one sigmoid, as PyTorch exports them, on synthetic 13-feature rows.

    The rows are made up (three overlapping clusters around wine-like magnitudes), 300 to train and 30
    held out; the heads are trained here in numpy, so no scikit-learn or PyTorch is needed.
    """
    rng = np.random.default_rng(17)
    centres = rng.normal(size=(3, 13))
    classes = rng.integers(0, 3, size=330)
    rows = BLOB_SCALES * (1 + 0.12 * (centres[classes] + 1.3 * rng.normal(size=(330, 13))))
    train_x, test_x, train_y, test_y = rows[:300], rows[300:], classes[:300], classes[300:]
    mean, std = train_x.mean(axis=0), train_x.std(axis=0)
    scaled = (train_x - mean) / std
    weights, bias = _fit_linear(scaled, np.eye(3)[train_y], softmax=True)
    save(_linear_head("blobs_logits", mean, std, weights, bias, "logits"), "blobs-logits.onnx")
    save(_linear_head("blobs_output", mean, std, weights, bias, "output"), "blobs-output.onnx")
    ruby = (train_y == 1).astype(np.float64)[:, None]
    weights, bias = _fit_linear(scaled, ruby, softmax=False)
    save(_linear_head("blobs_sigmoid", mean, std, weights, bias, "output", sigmoid=True), "blobs-sigmoid.onnx")
    held_out = np.round(test_x, 3).astype(np.float32)
    with (HERE / "blobs-holdout.csv").open("w") as handle:
        handle.write(",".join([f"x{i}" for i in range(13)] + ["label"]) + "\n")
        for row, label in zip(held_out, test_y, strict=True):
            handle.write(",".join(f"{float(v):.6g}" for v in row) + f",{BLOB_NAMES[label]}\n")
    np.savez(HERE / "blobs-binary-holdout.npz", inputs=held_out, labels=(test_y == 1).astype(np.int64))


def main(argv: list[str]) -> None:
    if argv != ["logits"]:
        sklearn_and_helper_graphs()
    logits_graphs()


if __name__ == "__main__":
    main(sys.argv[1:])
