"""The shipped model files are the ones the manifest describes, and they are accurate."""

import hashlib
import json
from pathlib import Path

import numpy as np
import onnxruntime as ort

MODELS = Path(__file__).resolve().parents[2] / "models"
MANIFEST = json.loads((MODELS / "manifest.json").read_text())


def test_every_file_matches_its_manifest_sha256():
    files = {spec["file"]: spec["sha256"] for spec in MANIFEST["models"].values()} | {
        name: spec["sha256"] for name, spec in MANIFEST["datasets"].items()
    }
    for name, sha256 in files.items():
        assert hashlib.sha256((MODELS / name).read_bytes()).hexdigest() == sha256, name


def test_digits_onnx_accuracy_on_the_holdout_split():
    spec = MANIFEST["models"]["digits-mlp"]
    session = ort.InferenceSession(str(MODELS / spec["file"]), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == [i["name"] for i in spec["inputs"]]
    assert [o.name for o in session.get_outputs()] == [o["name"] for o in spec["outputs"]]
    holdout = np.load(MODELS / "digits-holdout.npz")
    labels, probabilities = session.run(None, {"pixels": holdout["images"].astype(np.float32)})
    accuracy = float((labels == holdout["labels"]).mean())
    assert accuracy >= 0.95
    assert abs(accuracy - spec["metrics"]["holdout_accuracy"]) < 1e-3  # the manifest tells the truth
    assert probabilities.shape == (len(holdout["labels"]), 10)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
