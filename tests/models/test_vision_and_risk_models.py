"""The second digits model, the two-model vision ensemble and the risk model: files, contract, measured numbers.

Needs only onnxruntime and numpy: everything is recomputed from the shipped ONNX and npz files.
"""

import hashlib
import json
from functools import cache
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

MODELS = Path(__file__).resolve().parents[2] / "models"
MANIFEST = json.loads((MODELS / "manifest.json").read_text())
SVC = MANIFEST["models"]["digits-svc"]
MLP = MANIFEST["models"]["digits-mlp"]
RISK = MANIFEST["models"]["risk-logreg"]
ENSEMBLE = SVC["metrics"]["ensemble_with_digits_mlp"]
ORT_TYPES = {"float32": "tensor(float)", "int64": "tensor(int64)"}


@cache
def session(name: str) -> ort.InferenceSession:
    spec = MANIFEST["models"][name]
    return ort.InferenceSession(str(MODELS / spec["file"]), providers=["CPUExecutionProvider"])


@cache
def digits_holdout() -> tuple[np.ndarray, np.ndarray]:
    holdout = np.load(MODELS / "digits-holdout.npz")
    return holdout["images"].astype(np.float32), holdout["labels"].astype(np.int64)


@cache
def run_digits(name: str) -> tuple[np.ndarray, np.ndarray]:
    labels, probabilities = session(name).run(None, {"pixels": digits_holdout()[0]})
    return labels, probabilities


@cache
def risk_holdout() -> tuple[np.ndarray, np.ndarray]:
    holdout = np.load(MODELS / "risk-holdout.npz")
    return holdout["features"], holdout["labels"]


@cache
def run_risk() -> tuple[np.ndarray, np.ndarray]:
    labels, probabilities = session("risk-logreg").run(None, {"features": risk_holdout()[0]})
    return labels, probabilities


def test_every_new_file_matches_its_manifest_sha256_and_size():
    new_files = {spec["file"]: spec for spec in (SVC, RISK)}
    for name, spec in new_files.items():
        data = (MODELS / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == spec["sha256"], name
        assert len(data) == spec["bytes"], name
    data = (MODELS / "risk-holdout.npz").read_bytes()
    assert hashlib.sha256(data).hexdigest() == MANIFEST["datasets"]["risk-holdout.npz"]["sha256"]
    # test_models.py's sha test walks models[*].file and datasets: these entries put the new files in that walk.
    assert {"digits-svc.onnx", "risk-logreg.onnx"} <= {spec["file"] for spec in MANIFEST["models"].values()}


@pytest.mark.parametrize(
    "name, input_name, width, classes",
    [("digits-svc", "pixels", 64, 10), ("risk-logreg", "features", 30, 2)],
)
def test_io_contract(name, input_name, width, classes):
    spec = MANIFEST["models"][name]
    assert spec["inputs"] == [{"name": input_name, "dtype": "float32", "shape": [None, width]}]
    assert spec["outputs"] == [
        {"name": "label", "dtype": "int64", "shape": [None]},
        {"name": "probabilities", "dtype": "float32", "shape": [None, classes]},
    ]
    got_inputs = [(i.name, i.type, i.shape) for i in session(name).get_inputs()]
    got_outputs = [(o.name, o.type, o.shape) for o in session(name).get_outputs()]
    assert got_inputs == [(i["name"], ORT_TYPES[i["dtype"]], i["shape"]) for i in spec["inputs"]]
    assert got_outputs == [(o["name"], ORT_TYPES[o["dtype"]], o["shape"]) for o in spec["outputs"]]


def test_digits_svc_is_the_same_contract_as_the_mlp_and_a_different_model():
    assert SVC["inputs"] == MLP["inputs"] and SVC["outputs"] == MLP["outputs"] and SVC["labels"] == MLP["labels"]
    assert SVC["sha256"] != MLP["sha256"]
    assert SVC["bytes"] < 500_000


def test_digits_svc_onnx_accuracy_on_the_shared_holdout_split():
    images, truth = digits_holdout()
    labels, probabilities = run_digits("digits-svc")
    accuracy = float((labels == truth).mean())
    assert accuracy >= 0.97
    assert abs(accuracy - SVC["metrics"]["holdout_accuracy"]) < 1e-3
    assert len(truth) == SVC["metrics"]["holdout_size"] == MLP["metrics"]["holdout_size"]
    assert labels.dtype == np.int64 and probabilities.dtype == np.float32
    assert probabilities.shape == (len(truth), 10)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(labels, probabilities.argmax(axis=1))


def test_ensemble_metrics_recomputed_from_both_onnx_files():
    # The ensemble was measured against the digits-mlp file that ships now, not an older build.
    assert ENSEMBLE["members_sha256"] == {"digits-mlp": MLP["sha256"], "digits-svc": SVC["sha256"]}
    _, truth = digits_holdout()
    mlp_labels, mlp_probabilities = run_digits("digits-mlp")
    svc_labels, svc_probabilities = run_digits("digits-svc")
    mean = (mlp_probabilities + svc_probabilities) / 2
    correct = mean.argmax(axis=1) == truth
    agree = mlp_labels == svc_labels
    confidence = mean.max(axis=1)
    assert abs(correct.mean() - ENSEMBLE["holdout_accuracy"]) < 1e-3
    assert abs(agree.mean() - ENSEMBLE["agreement_rate"]) < 1e-3
    assert (int(agree.sum()), int((~agree).sum())) == (ENSEMBLE["agree_count"], ENSEMBLE["disagree_count"])
    assert abs(correct[agree].mean() - ENSEMBLE["accuracy_when_agree"]) < 1e-3
    assert abs(confidence[agree].mean() - ENSEMBLE["mean_confidence_when_agree"]) < 1e-3
    if (~agree).any():
        assert abs(correct[~agree].mean() - ENSEMBLE["accuracy_when_disagree"]) < 1e-3
        assert abs(confidence[~agree].mean() - ENSEMBLE["mean_confidence_when_disagree"]) < 1e-3
        # "Combined confidence" means something: it is lower when the branches disagree.
        assert confidence[~agree].mean() < confidence[agree].mean()


def test_risk_holdout_file_layout():
    features, labels = risk_holdout()
    assert features.dtype == np.float32 and features.shape == (RISK["metrics"]["holdout_size"], 30)
    assert labels.dtype == np.uint8 and labels.shape == (RISK["metrics"]["holdout_size"],)
    assert int((labels == RISK["risk_column"]).sum()) == RISK["metrics"]["holdout_risky"]
    assert len(RISK["feature_names"]) == 30 and len(set(RISK["feature_names"])) == 30


def test_risk_onnx_accuracy_probabilities_and_auc():
    _, truth = risk_holdout()
    labels, probabilities = run_risk()
    accuracy = float((labels == truth).mean())
    assert accuracy >= 0.95
    assert abs(accuracy - RISK["metrics"]["holdout_accuracy"]) < 1e-3
    assert probabilities.shape == (len(truth), 2) and probabilities.dtype == np.float32
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)

    risky = truth == RISK["risk_column"]
    risk = probabilities[:, RISK["risk_column"]]
    # ROC AUC as the Mann-Whitney statistic: P(a risky row scores above a safe one), ties count half.
    difference = risk[risky][:, None] - risk[~risky][None, :]
    auc = float((difference > 0).mean() + 0.5 * (difference == 0).mean())
    assert auc >= 0.97
    assert abs(auc - RISK["metrics"]["roc_auc"]) < 1e-3


def test_risk_column_is_the_malignant_high_risk_class():
    assert RISK["labels"] == ["malignant", "benign"]
    assert RISK["labels"][RISK["risk_column"]] == RISK["risk_label"] == "malignant"
    _, truth = risk_holdout()
    _, probabilities = run_risk()
    risk = probabilities[:, RISK["risk_column"]]
    risky = truth == RISK["risk_column"]
    assert risk[risky].mean() > 0.5 > risk[~risky].mean()


def test_review_threshold_numbers():
    _, truth = risk_holdout()
    _, probabilities = run_risk()
    at = RISK["metrics"]["at_review_threshold"]
    assert at["threshold"] == RISK["review_threshold"]
    review = probabilities[:, RISK["risk_column"]] >= RISK["review_threshold"]
    risky = truth == RISK["risk_column"]
    assert abs(review.mean() - at["review_fraction"]) < 1e-3
    assert abs(review[risky].mean() - at["risky_recall"]) < 1e-3
    assert abs(risky[review].mean() - at["review_precision"]) < 1e-3
    assert (int(review.sum()), int((risky & ~review).sum())) == (at["reviewed_count"], at["missed_risky_count"])
