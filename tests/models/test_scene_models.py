"""The vision workflow's detector and scene classifier: files, contract, and the held-out scores the
manifest records, recomputed from the shipped ONNX files and held-out scenes (onnxruntime and numpy only)."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from inferbus_lambda.detection import detect, mean_average_precision

MODELS = Path(__file__).resolve().parents[2] / "models"
MANIFEST = json.loads((MODELS / "manifest.json").read_text())
DETECTOR = MANIFEST["models"]["scene-detector"]
CLASSIFIER = MANIFEST["models"]["scene-classifier"]
HOLDOUT = "scenes-holdout.npz"


@cache
def held_out() -> dict[str, np.ndarray]:
    return dict(np.load(MODELS / HOLDOUT))


@cache
def session(spec_file: str) -> ort.InferenceSession:
    return ort.InferenceSession(str(MODELS / spec_file), providers=["CPUExecutionProvider"])


def truth() -> list[tuple[np.ndarray, np.ndarray]]:
    scenes = held_out()
    return [(scenes["boxes"][i, :n], scenes["classes"][i, :n]) for i, n in enumerate(scenes["counts"])]


def test_files_match_their_manifest_sha256_and_stay_small():
    for spec in (DETECTOR, CLASSIFIER):
        data = (MODELS / spec["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == spec["sha256"] and len(data) == spec["bytes"]
        assert len(data) < 2_000_000, f"{spec['file']}: a small model ships in the repository"
    assert hashlib.sha256((MODELS / HOLDOUT).read_bytes()).hexdigest() == MANIFEST["datasets"][HOLDOUT]["sha256"]
    assert (MODELS / HOLDOUT).stat().st_size < 1_000_000


def test_the_graphs_have_the_inputs_and_outputs_the_manifest_declares():
    for spec in (DETECTOR, CLASSIFIER):
        graph = session(spec["file"])
        assert [i.name for i in graph.get_inputs()] == [i["name"] for i in spec["inputs"]]
        assert [o.name for o in graph.get_outputs()] == [o["name"] for o in spec["outputs"]]


def test_the_detector_mean_average_precision_is_the_recorded_one_and_beats_its_baseline():
    scenes = held_out()
    boxes, scores, classes = session(DETECTOR["file"]).run(None, {"pixels": scenes["images"].astype(np.float32)})
    settings = DETECTOR["detection"]
    found = detect(boxes, scores, classes, iou_threshold=settings["iou_threshold"],
                   score_threshold=settings["score_threshold"])
    map50 = mean_average_precision(found, truth())
    metrics = DETECTOR["metrics"]
    assert round(map50, 4) == pytest.approx(metrics["holdout_map50"], abs=2e-4)
    assert map50 > metrics["holdout_map50_baseline"]
    assert metrics["holdout_size"] == len(scenes["images"])


def test_the_scene_accuracy_is_the_recorded_one_and_beats_its_baselines():
    scenes = held_out()
    labels, probabilities = session(CLASSIFIER["file"]).run(None, {"pixels": scenes["images"].astype(np.float32)})
    assert probabilities.shape == (len(labels), len(CLASSIFIER["labels"]))
    assert np.allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    accuracy = float((labels == scenes["scene"]).mean())
    metrics = CLASSIFIER["metrics"]
    assert round(accuracy, 4) == pytest.approx(metrics["holdout_scene_accuracy"], abs=2e-4)
    assert accuracy > metrics["holdout_majority_baseline"]
    assert accuracy >= metrics["holdout_scene_accuracy_baseline"]


def test_a_scene_label_is_its_content_and_no_single_pixel_gives_it_away():
    scenes = held_out()
    assert (scenes["scene"] == scenes["counts"] - 1).all()  # "one" ... "four": how many digits it holds
    assert set(scenes["scene"].tolist()) == set(range(len(CLASSIFIER["labels"])))
    # The best rule "pixel p is inked -> the most frequent label among such scenes" is barely better than
    # always answering the majority label: no background, border or corner marks a label.
    inked = (scenes["images"] > 0).reshape(len(scenes["images"]), -1)
    majority = np.bincount(scenes["scene"]).max() / len(scenes["scene"])
    best = 0.0
    for pixel in range(inked.shape[1]):
        right = 0
        for value in (False, True):
            chosen = scenes["scene"][inked[:, pixel] == value]
            right += np.bincount(chosen).max() if len(chosen) else 0
        best = max(best, right / len(scenes["scene"]))
    assert best < majority + 0.1


def test_the_models_take_a_scene_of_another_size():
    """Fully convolutional: a 32x64 scene runs, and the boxes fall on it."""
    scenes = held_out()
    wide = np.zeros((1, 32, 64), dtype=np.float32)
    wide[0, :, 8:56] = scenes["images"][0, 8:40].astype(np.float32)
    boxes, scores, classes = session(DETECTOR["file"]).run(None, {"pixels": wide})
    assert boxes.shape[:2] == scores.shape == classes.shape == (1, (32 // 4) * (64 // 4))
    (label,), _ = session(CLASSIFIER["file"]).run(None, {"pixels": wide})
    assert 0 <= label < len(CLASSIFIER["labels"])


def test_the_held_out_scenes_are_made_of_held_out_digits_only():
    """Rebuilt from build_digits.py's held-out split with build_scenes.py's seed, the file comes back
    byte for byte: no held-out scene holds a digit image the models trained on."""
    pytest.importorskip("sklearn", reason="rebuilding the scenes needs scikit-learn (pip install -e '.[models]')")
    import sys

    sys.path.insert(0, str(MODELS))
    try:
        import build_scenes
    finally:
        sys.path.remove(str(MODELS))
    _, x_holdout, _, y_holdout = build_scenes.holdout_split()
    rebuilt = build_scenes.scenes(build_scenes.SEED + 1, build_scenes.HOLDOUT_SCENES, x_holdout, y_holdout)
    for name, array in held_out().items():
        assert np.array_equal(rebuilt[name], array), name
