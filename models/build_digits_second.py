"""Build the second digits classifier (branch 2 of the vision fan-out) and measure the ensemble.

Branch 1 is ``digits-mlp.onnx`` (built by ``build_digits.py``). This script trains a
*different architecture* on the same bundled ``digits`` data and the same held-out split
(``build_digits.holdout_split``): an RBF-kernel support vector machine whose one-vs-rest
decision values are turned into probabilities by sigmoid calibration
(``CalibratedClassifierCV(SVC(), method="sigmoid", ensemble=False)``, the replacement
scikit-learn 1.9 names for the deprecated ``SVC(probability=True)``). The kernel works on
raw 0-16 pixels (``gamma`` is in raw-pixel units), so the graph needs no scaling node.

It exports the model with the same I/O contract as the MLP (input ``pixels`` float32
[N, 64] raw 0-16; outputs ``label`` int64 [N] and ``probabilities`` float32 [N, 10], no
ZipMap, opset 17), measures it *by running the ONNX file with onnxruntime*, then runs both
ONNX files on the held-out split and records what the fan-out workflow computes: the mean
of the two probability rows, label = argmax.

It writes ``models/digits-svc.onnx`` and updates only ``models["digits-svc"]`` in
``models/manifest.json``. It never rebuilds or rewrites ``digits-mlp.onnx`` or
``digits-holdout.npz``: it reads them as they are shipped.

Usage::

    pip install -e '.[models]'
    python models/build_digits_second.py
"""

from __future__ import annotations

import platform

import numpy as np

from build_digits import DIGITS_IO, HOLDOUT_FILE, HOLDOUT_FRACTION, INPUT_NAME, SEED, holdout_split
from build_digits import MODEL_FILE as MLP_FILE
from build_digits import MODEL_NAME as MLP_NAME
from manifest_io import MODELS_DIR, sha256_of, update_manifest

MODEL_NAME = "digits-svc"
MODEL_VERSION = "1.0.0"
MODEL_FILE = MODELS_DIR / f"{MODEL_NAME}.onnx"
OPSET = 17
# Chosen by 5-fold stratified cross-validation on the training split only (the held-out
# rows were not looked at): C in {1, 3, 10, 30} x gamma in {scale, 5e-4, 1e-3, 2e-3};
# C=3, gamma=5e-4 tied for the best mean CV accuracy (0.9917) with the smallest C.
SVC_C = 3.0
SVC_GAMMA = 0.0005
CALIBRATION_FOLDS = 5
MAX_BYTES = 500_000


def run_onnx(model_file, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(model_file), providers=["CPUExecutionProvider"])
    labels, probabilities = session.run(None, {INPUT_NAME: images.astype(np.float32)})
    return labels, probabilities


def ensemble_metrics(
    y: np.ndarray, mlp: tuple[np.ndarray, np.ndarray], svc: tuple[np.ndarray, np.ndarray]
) -> dict:
    """What the vision fan-out computes from its two branches, measured on the held-out split."""
    (mlp_labels, mlp_probabilities), (svc_labels, svc_probabilities) = mlp, svc
    mean_probabilities = (mlp_probabilities + svc_probabilities) / 2
    labels = mean_probabilities.argmax(axis=1)
    confidence = mean_probabilities.max(axis=1)
    correct = labels == y
    agree = mlp_labels == svc_labels
    return {
        "rule": "probabilities = (digits-mlp row + digits-svc row) / 2; label = argmax (first on ties); "
        "confidence = max of that mean row",
        "members_sha256": {MLP_NAME: sha256_of(MLP_FILE), MODEL_NAME: sha256_of(MODEL_FILE)},
        "holdout_accuracy": round(float(correct.mean()), 4),
        "agreement_rate": round(float(agree.mean()), 4),
        "agree_count": int(agree.sum()),
        "disagree_count": int((~agree).sum()),
        "accuracy_when_agree": round(float(correct[agree].mean()), 4),
        "accuracy_when_disagree": round(float(correct[~agree].mean()), 4) if (~agree).any() else None,
        "mean_confidence_when_agree": round(float(confidence[agree].mean()), 4),
        "mean_confidence_when_disagree": round(float(confidence[~agree].mean()), 4) if (~agree).any() else None,
        "member_accuracy_when_disagree": {
            MLP_NAME: round(float((mlp_labels == y)[~agree].mean()), 4) if (~agree).any() else None,
            MODEL_NAME: round(float((svc_labels == y)[~agree].mean()), 4) if (~agree).any() else None,
        },
        "evaluated_with": f"onnxruntime, both ONNX files, on {HOLDOUT_FILE.name}",
    }


def main() -> None:
    import onnx
    import sklearn
    import skl2onnx
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.model_selection import StratifiedKFold
    from sklearn.svm import SVC

    x_train, x_holdout, y_train, y_holdout = holdout_split()
    # The tests recompute everything from the shipped npz: it must hold exactly these rows.
    shipped = np.load(HOLDOUT_FILE)
    assert np.array_equal(shipped["images"].astype(np.float32), x_holdout), "digits-holdout.npz is a different split"
    assert np.array_equal(shipped["labels"], y_holdout), "digits-holdout.npz is a different split"

    model = CalibratedClassifierCV(
        SVC(kernel="rbf", C=SVC_C, gamma=SVC_GAMMA),
        method="sigmoid",
        ensemble=False,
        cv=StratifiedKFold(CALIBRATION_FOLDS, shuffle=True, random_state=SEED),
    )
    model.fit(x_train, y_train)
    onnx_model = skl2onnx.convert_sklearn(
        model,
        name=MODEL_NAME,
        initial_types=[(INPUT_NAME, FloatTensorType([None, 64]))],
        options={id(model): {"zipmap": False}},
        target_opset=OPSET,
    )
    onnx.checker.check_model(onnx_model, full_check=True)
    MODEL_FILE.write_bytes(onnx_model.SerializeToString())

    labels, probabilities = run_onnx(MODEL_FILE, x_holdout)
    accuracy = float((labels == y_holdout).mean())
    probability_gap = float(np.abs(probabilities - model.predict_proba(x_holdout)).max())
    output_names = [output.name for output in onnx.load(str(MODEL_FILE)).graph.output]
    assert output_names == ["label", "probabilities"], output_names
    assert labels.dtype == np.int64 and probabilities.dtype == np.float32
    assert probabilities.shape == (len(y_holdout), 10)
    assert np.array_equal(labels, probabilities.argmax(axis=1)), "label is not the argmax of probabilities"
    assert probability_gap < 1e-4, f"ONNX probabilities differ from scikit-learn's by {probability_gap}"
    assert np.allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    assert accuracy >= 0.97, accuracy
    assert MODEL_FILE.stat().st_size < MAX_BYTES, MODEL_FILE.stat().st_size

    ensemble = ensemble_metrics(y_holdout, run_onnx(MLP_FILE, x_holdout), (labels, probabilities))
    default_opset = next(o.version for o in onnx_model.opset_import if o.domain in ("", "ai.onnx"))
    entry = {
        "version": MODEL_VERSION,
        "file": MODEL_FILE.name,
        "sha256": sha256_of(MODEL_FILE),
        "bytes": MODEL_FILE.stat().st_size,
        "task": "classify an 8x8 greyscale digit image (pixels 0-16) into 0-9; branch 2 of the vision "
        "fan-out, a different architecture from digits-mlp on the same data and split",
        **DIGITS_IO,
        "metrics": {
            "holdout_accuracy": round(accuracy, 4),
            "holdout_size": int(len(y_holdout)),
            "train_size": int(len(y_train)),
            "evaluated_with": f"onnxruntime on {HOLDOUT_FILE.name}",
            "max_abs_probability_gap_vs_sklearn": float(f"{probability_gap:.2e}"),
            "ensemble_with_digits_mlp": ensemble,
        },
        "built_with": {
            "dataset": "sklearn.datasets.load_digits (UCI optical digits, ships with scikit-learn)",
            "split": f"stratified train_test_split test_size={HOLDOUT_FRACTION} random_state={SEED} "
            "(build_digits.holdout_split, the same rows as digits-mlp)",
            "estimator": f"CalibratedClassifierCV(SVC(kernel='rbf', C={SVC_C:g}, gamma={SVC_GAMMA:g}), "
            f"method='sigmoid', ensemble=False, cv=StratifiedKFold({CALIBRATION_FOLDS}, shuffle=True, "
            f"random_state={SEED})) on raw 0-16 pixels (gamma in raw-pixel units: no scaling node); "
            "C and gamma chosen by 5-fold CV on the training split only",
            "script": "models/build_digits_second.py",
            "python": platform.python_version(),
            "scikit-learn": sklearn.__version__,
            "skl2onnx": skl2onnx.__version__,
            "onnx": onnx.__version__,
            "opset": default_opset,
        },
    }
    update_manifest(models={MODEL_NAME: entry})
    print(f"{MODEL_NAME} {MODEL_VERSION}: holdout accuracy {accuracy:.4f} on {len(y_holdout)} images")
    print(
        f"ensemble with {MLP_NAME}: accuracy {ensemble['holdout_accuracy']:.4f}, "
        f"agreement {ensemble['agreement_rate']:.4f}"
        f" (accuracy {ensemble['accuracy_when_agree']} when they agree, {ensemble['accuracy_when_disagree']} when not)"
    )
    print(f"wrote {MODEL_FILE.name} ({MODEL_FILE.stat().st_size} bytes) and its manifest entry")


if __name__ == "__main__":
    main()
