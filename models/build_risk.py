"""Build the tabular risk model behind the conditional-routing workflow.

``TransactionSubmitted`` events carry 30 numeric features. No transaction data ships with
any package we may use, so this model is trained on a STAND-IN: scikit-learn's bundled
``load_breast_cancer`` (Breast Cancer Wisconsin (Diagnostic), 569 rows, 30 numeric
features). It is medical data, not transactions: the model exercises the routing path
(a score, a threshold, a manual-review branch) with honest, measured numbers, and says
nothing about fraud.

The "risk score" is the probability of class 0, ``malignant`` in scikit-learn's order
(``["malignant", "benign"]``): malignant plays "high risk". Rows whose risk score is at
least the review threshold (0.5 by default) go to manual review.

A ``StandardScaler`` + ``LogisticRegression`` pipeline is exported with skl2onnx (no
ZipMap, opset 17) and measured *by running the ONNX file with onnxruntime* on a stratified,
seeded 25% held-out split. Writes:

- ``models/risk-logreg.onnx``   the model (about 1 kB);
- ``models/risk-holdout.npz``   the held-out rows (``features`` float32 [n, 30], ``labels``
  uint8 [n], 0 = malignant/risky), so the demo and the tests need no scikit-learn;
- ``models/manifest.json``      only ``models["risk-logreg"]`` and ``datasets["risk-holdout.npz"]``.

Usage::

    pip install -e '.[models]'
    python models/build_risk.py
"""

from __future__ import annotations

import platform

import numpy as np

from manifest_io import MODELS_DIR, sha256_of, update_manifest

MODEL_NAME = "risk-logreg"
MODEL_VERSION = "1.0.0"
MODEL_FILE = MODELS_DIR / f"{MODEL_NAME}.onnx"
HOLDOUT_FILE = MODELS_DIR / "risk-holdout.npz"
SEED = 7
HOLDOUT_FRACTION = 0.25
INPUT_NAME = "features"
N_FEATURES = 30
OPSET = 17
RISK_COLUMN = 0  # sklearn target 0 = "malignant", the class treated as high risk
REVIEW_THRESHOLD = 0.5


def holdout_split():
    """Return ``(x_train, x_holdout, y_train, y_holdout, dataset)``, stratified and seeded."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    dataset = load_breast_cancer()
    x_train, x_holdout, y_train, y_holdout = train_test_split(
        dataset.data.astype(np.float32),
        dataset.target.astype(np.int64),
        test_size=HOLDOUT_FRACTION,
        random_state=SEED,
        stratify=dataset.target,
    )
    return x_train, x_holdout, y_train, y_holdout, dataset


def main() -> None:
    import onnx
    import onnxruntime as ort
    import sklearn
    import skl2onnx
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x_train, x_holdout, y_train, y_holdout, dataset = holdout_split()
    label_names = [str(name) for name in dataset.target_names]
    assert label_names[RISK_COLUMN] == "malignant", label_names
    feature_names = [str(name) for name in dataset.feature_names]
    assert len(feature_names) == N_FEATURES

    classifier = LogisticRegression(max_iter=1000)
    pipeline = make_pipeline(StandardScaler(), classifier)
    pipeline.fit(x_train, y_train)
    onnx_model = skl2onnx.convert_sklearn(
        pipeline,
        name=MODEL_NAME,
        initial_types=[(INPUT_NAME, FloatTensorType([None, N_FEATURES]))],
        options={id(classifier): {"zipmap": False}},
        target_opset=OPSET,
    )
    onnx.checker.check_model(onnx_model, full_check=True)
    MODEL_FILE.write_bytes(onnx_model.SerializeToString())

    session = ort.InferenceSession(str(MODEL_FILE), providers=["CPUExecutionProvider"])
    labels, probabilities = session.run(None, {INPUT_NAME: x_holdout})
    output_names = [output.name for output in session.get_outputs()]
    assert output_names == ["label", "probabilities"], output_names
    assert labels.dtype == np.int64 and probabilities.dtype == np.float32
    assert probabilities.shape == (len(y_holdout), 2)
    assert np.allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    probability_gap = float(np.abs(probabilities - pipeline.predict_proba(x_holdout)).max())
    assert probability_gap < 1e-4, probability_gap

    risky = y_holdout == RISK_COLUMN
    risk = probabilities[:, RISK_COLUMN]
    review = risk >= REVIEW_THRESHOLD
    accuracy = float((labels == y_holdout).mean())
    roc_auc = float(roc_auc_score(risky, risk))
    np.savez_compressed(HOLDOUT_FILE, features=x_holdout.astype(np.float32), labels=y_holdout.astype(np.uint8))

    default_opset = next(o.version for o in onnx_model.opset_import if o.domain in ("", "ai.onnx"))
    entry = {
        "version": MODEL_VERSION,
        "file": MODEL_FILE.name,
        "sha256": sha256_of(MODEL_FILE),
        "bytes": MODEL_FILE.stat().st_size,
        "task": "score the risk of a TransactionSubmitted event from its 30 numeric features. STAND-IN: "
        "trained on scikit-learn's breast_cancer data (medical measurements of cell nuclei, not "
        "transactions); 'malignant' plays 'high risk'. The numbers show the routing works, not fraud skill.",
        "inputs": [{"name": INPUT_NAME, "dtype": "float32", "shape": [None, N_FEATURES]}],
        "outputs": [
            {"name": "label", "dtype": "int64", "shape": [None]},
            {"name": "probabilities", "dtype": "float32", "shape": [None, 2]},
        ],
        "labels": label_names,
        "risk_column": RISK_COLUMN,
        "risk_label": label_names[RISK_COLUMN],
        "review_threshold": REVIEW_THRESHOLD,
        "review_rule": f"probabilities[:, {RISK_COLUMN}] >= review_threshold -> manual review",
        "feature_names": feature_names,
        "metrics": {
            "holdout_accuracy": round(accuracy, 4),
            "roc_auc": round(roc_auc, 4),
            "at_review_threshold": {
                "threshold": REVIEW_THRESHOLD,
                "review_fraction": round(float(review.mean()), 4),
                "risky_recall": round(float(review[risky].mean()), 4),
                "review_precision": round(float(risky[review].mean()), 4),
                "reviewed_count": int(review.sum()),
                "missed_risky_count": int((risky & ~review).sum()),
            },
            "holdout_size": int(len(y_holdout)),
            "holdout_risky": int(risky.sum()),
            "train_size": int(len(y_train)),
            "evaluated_with": f"onnxruntime on {HOLDOUT_FILE.name}",
            "max_abs_probability_gap_vs_sklearn": float(f"{probability_gap:.2e}"),
        },
        "built_with": {
            "dataset": "sklearn.datasets.load_breast_cancer: a copy of the UCI ML Breast Cancer Wisconsin "
            "(Diagnostic) dataset that ships with scikit-learn; a STAND-IN tabular dataset for transaction "
            "features (it is medical data, not transactions)",
            "provenance": "as scikit-learn's DESCR documents it: creators Dr. William H. Wolberg, W. Nick Street, "
            "Olvi L. Mangasarian (University of Wisconsin); donor Nick Street; November 1995; 569 rows "
            "(212 malignant, 357 benign), 30 features computed from digitized images of fine needle aspirates "
            "of breast masses; cite W.N. Street, W.H. Wolberg, O.L. Mangasarian, 'Nuclear feature extraction "
            "for breast tumor diagnosis', IS&T/SPIE 1993",
            "licence": "scikit-learn's documentation of this dataset states no licence; the data file is "
            "distributed inside scikit-learn (BSD-3-Clause). Check the UCI repository's terms before "
            "redistributing the data beyond this repository",
            "split": f"stratified train_test_split test_size={HOLDOUT_FRACTION} random_state={SEED}",
            "estimator": "Pipeline(StandardScaler(), LogisticRegression(max_iter=1000)), scaling inside the graph",
            "script": "models/build_risk.py",
            "python": platform.python_version(),
            "scikit-learn": sklearn.__version__,
            "skl2onnx": skl2onnx.__version__,
            "onnx": onnx.__version__,
            "opset": default_opset,
        },
    }
    dataset_entry = {
        "sha256": sha256_of(HOLDOUT_FILE),
        "arrays": {"features": f"float32 [n, {N_FEATURES}]", "labels": "uint8 [n]"},
        "labels": "0 = malignant (risky), 1 = benign, scikit-learn's coding",
        "source": "held-out split of sklearn.datasets.load_breast_cancer (stand-in for transaction features)",
    }
    update_manifest(models={MODEL_NAME: entry}, datasets={HOLDOUT_FILE.name: dataset_entry})
    print(f"{MODEL_NAME} {MODEL_VERSION}: holdout accuracy {accuracy:.4f}, ROC AUC {roc_auc:.4f}")
    print(
        f"at risk >= {REVIEW_THRESHOLD}: {review.mean():.1%} of rows to manual review, "
        f"recall of risky rows {review[risky].mean():.1%}"
    )
    print(f"wrote {MODEL_FILE.name} ({MODEL_FILE.stat().st_size} bytes), {HOLDOUT_FILE.name}, their manifest entries")


if __name__ == "__main__":
    main()
