"""Build the digits classifier shipped with inferbus.

Trains a small multi-layer perceptron on scikit-learn's bundled ``digits`` data
(1,797 greyscale 8x8 images, pixel values 0-16), exports it to ONNX without
ZipMap (a plain probability tensor batches far faster), measures accuracy on a
held-out split *by running the ONNX file with onnxruntime*, and writes:

- ``models/digits-mlp.onnx``      the model (about 20 kB);
- ``models/digits-holdout.npz``   the held-out images and labels, so the demo
  and the tests need no scikit-learn;
- ``models/manifest.json``        name, version, sha256, I/O, accuracy, provenance.

Nothing is downloaded: the data ships inside scikit-learn.

Usage::

    pip install -e '.[models]'
    python models/build_digits.py
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
from manifest_io import sha256_of, update_manifest

MODELS_DIR = Path(__file__).resolve().parent
MODEL_NAME = "digits-mlp"
MODEL_VERSION = "1.0.0"
MODEL_FILE = MODELS_DIR / f"{MODEL_NAME}.onnx"
HOLDOUT_FILE = MODELS_DIR / "digits-holdout.npz"
MANIFEST_FILE = MODELS_DIR / "manifest.json"
SEED = 7
HOLDOUT_FRACTION = 0.2
INPUT_NAME = "pixels"
# The I/O every digit model shares, so the vision workflow's branches are interchangeable.
DIGITS_IO = {
    "inputs": [{"name": INPUT_NAME, "dtype": "float32", "shape": [None, 64]}],
    "outputs": [
        {"name": "label", "dtype": "int64", "shape": [None]},
        {"name": "probabilities", "dtype": "float32", "shape": [None, 10]},
    ],
    "labels": list(range(10)),
}


def holdout_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(x_train, x_holdout, y_train, y_holdout)``, stratified and seeded."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    return train_test_split(
        digits.data.astype(np.float32),
        digits.target.astype(np.int64),
        test_size=HOLDOUT_FRACTION,
        random_state=SEED,
        stratify=digits.target,
    )


def onnx_accuracy(model_file: Path, images: np.ndarray, labels: np.ndarray) -> float:
    import onnxruntime as ort

    session = ort.InferenceSession(str(model_file), providers=["CPUExecutionProvider"])
    predicted, _ = session.run(None, {INPUT_NAME: images.astype(np.float32)})
    return float((predicted == labels).mean())


def main() -> None:
    import onnx
    import sklearn
    import skl2onnx
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.neural_network import MLPClassifier

    x_train, x_holdout, y_train, y_holdout = holdout_split()
    mlp = MLPClassifier(hidden_layer_sizes=(64,), max_iter=600, random_state=SEED)
    mlp.fit(x_train / 16.0, y_train)
    # Callers send raw 0-16 pixels: fold the 1/16 scaling into the first layer's weights,
    # so the exported graph is one MLP with no preprocessing node.
    mlp.coefs_[0] = mlp.coefs_[0] / 16.0
    onnx_model = skl2onnx.convert_sklearn(
        mlp,
        name=MODEL_NAME,
        initial_types=[(INPUT_NAME, FloatTensorType([None, 64]))],
        options={id(mlp): {"zipmap": False}},
        target_opset=17,
    )
    MODEL_FILE.write_bytes(onnx_model.SerializeToString())

    accuracy = onnx_accuracy(MODEL_FILE, x_holdout, y_holdout)
    np.savez_compressed(HOLDOUT_FILE, images=x_holdout.astype(np.uint8), labels=y_holdout.astype(np.uint8))

    output_names = [output.name for output in onnx.load(str(MODEL_FILE)).graph.output]
    assert output_names == ["label", "probabilities"], output_names
    update_manifest(
        models={
            MODEL_NAME: {
                "version": MODEL_VERSION,
                "file": MODEL_FILE.name,
                "sha256": sha256_of(MODEL_FILE),
                "bytes": MODEL_FILE.stat().st_size,
                "task": "classify an 8x8 greyscale digit image (pixels 0-16) into 0-9",
                **DIGITS_IO,
                "metrics": {
                    "holdout_accuracy": round(accuracy, 4),
                    "holdout_size": int(len(y_holdout)),
                    "train_size": int(len(y_train)),
                    "evaluated_with": f"onnxruntime on {HOLDOUT_FILE.name}",
                },
                "built_with": {
                    "dataset": "sklearn.datasets.load_digits (UCI optical digits, ships with scikit-learn)",
                    "split": f"stratified train_test_split test_size={HOLDOUT_FRACTION} random_state={SEED}",
                    "estimator": "MLPClassifier(hidden_layer_sizes=(64,)), input scaling folded into layer 1",
                    "script": "models/build_digits.py",
                    "python": platform.python_version(),
                    "scikit-learn": sklearn.__version__,
                    "skl2onnx": skl2onnx.__version__,
                    "onnx": onnx.__version__,
                    "opset": 17,
                },
            }
        },
        datasets={
            HOLDOUT_FILE.name: {
                "sha256": sha256_of(HOLDOUT_FILE),
                "arrays": {"images": "uint8 [n, 64]", "labels": "uint8 [n]"},
                "source": "held-out split of sklearn.datasets.load_digits",
            }
        },
    )
    print(f"{MODEL_NAME} {MODEL_VERSION}: holdout accuracy {accuracy:.4f} on {len(y_holdout)} images")
    print(f"wrote {MODEL_FILE.name} ({MODEL_FILE.stat().st_size} bytes), {HOLDOUT_FILE.name}, {MANIFEST_FILE.name}")


if __name__ == "__main__":
    main()
