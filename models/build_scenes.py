"""Build the vision workflow's two models: a digit detector and a scene classifier, on composed scenes.

A *scene* is a 48x48 greyscale canvas (pixels 0-16, as scikit-learn's digits) holding one to four
digits of scikit-learn's bundled ``digits`` data, each scaled to 8-16 pixels, placed at random
without overlap, over speckle noise. Its truth is each digit's tight box ``[x0, y0, x1, y1]`` and
class, and a *scene label*: how many digits it holds (``one`` … ``four``), which depends on the
content, not on a background any single pixel gives away.

The source digits are split as ``build_digits.py`` splits them (the same seeded, stratified 80/20):
training scenes are made of training digits only, held-out scenes of held-out digits only, so no
held-out scene contains a digit image seen in training.

- ``scene-detector``: a small CNN predicting, per 4x4-pixel cell of the canvas, objectness, class
  and box (YOLO/CenterNet style). The graph decodes every cell to a candidate box in pixels and ends
  there: outputs ``boxes`` [n, k, 4], ``scores`` [n, k], ``classes`` [n, k]; non-maximum suppression
  runs in numpy at inference (``functions/inferbus_lambda/detection.py``).
- ``scene-classifier``: a small CNN with global pooling: outputs ``label`` [n] and ``probabilities``
  [n, 4]. Both take ``pixels`` [n, height, width] float 0-16, any size (fully convolutional).

Scores are measured by onnxruntime on ``models/scenes-holdout.npz`` (the shipped held-out scenes),
beside a baseline measured in the same run: connected components of the inked pixels, each crop
classified by ``digits-mlp`` (boxes) and counted (scene label).

torch is a build-time tool only (CPU, one thread); nothing downloaded, the data ships in scikit-learn.

Usage::

    python models/build_scenes.py          # 3,000 steps: 18 minutes on one shared CPU thread here
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

import numpy as np
from build_digits import SEED, holdout_split
from manifest_io import sha256_of, update_manifest

MODELS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(MODELS_DIR.parent / "functions"))
from inferbus_lambda.detection import Detections, detect, mean_average_precision

DETECTOR, CLASSIFIER = "scene-detector", "scene-classifier"
VERSION = "1.0.0"
HOLDOUT_FILE = MODELS_DIR / "scenes-holdout.npz"
SIZE = 48
STRIDE = 4
MAX_DIGITS = 4
SCENE_LABELS = ["one", "two", "three", "four"]  # index = digits in the scene - 1
DIGIT_SIZES = (8, 16)  # a digit's side in pixels, inclusive
NOISE = 0.03  # the share of pixels given a random speckle
OVERLAP = 3  # pixels two digits' squares may share along an axis
HOLDOUT_SCENES = 400
TRAIN_STEPS = 3000
BATCH = 64
SCORE_THRESHOLD, IOU_THRESHOLD = 0.1, 0.5
OPSET = 17
DETECTOR_WIDTH, CLASSIFIER_WIDTH = 10, 4  # each backbone's first layer's channels (x2, x4 deeper)


def resize(image: np.ndarray, side: int) -> np.ndarray:
    """An 8x8 digit (0-16) resized to side x side by bilinear interpolation, rounded to ints."""
    positions = (np.arange(side) + 0.5) * image.shape[0] / side - 0.5
    low = np.clip(np.floor(positions).astype(int), 0, image.shape[0] - 1)
    high = np.clip(low + 1, 0, image.shape[0] - 1)
    weight = np.clip(positions - low, 0, 1)
    rows = image[low] * (1 - weight)[:, None] + image[high] * weight[:, None]
    return np.rint(rows[:, low] * (1 - weight) + rows[:, high] * weight).astype(np.int64)


def compose(rng: np.random.Generator, digits: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One scene: ``(canvas [SIZE, SIZE] uint8, boxes [d, 4] float32, classes [d] int64)``."""
    canvas = np.zeros((SIZE, SIZE), dtype=np.int64)
    count = int(rng.integers(1, MAX_DIGITS + 1))
    placed: list[tuple[int, int, int]] = []
    boxes, classes = [], []
    while len(placed) < count:
        side = int(rng.integers(DIGIT_SIZES[0], DIGIT_SIZES[1] + 1))
        for _ in range(100):
            x, y = (int(v) for v in rng.integers(0, SIZE - side + 1, size=2))
            # Squares may overlap by up to OVERLAP pixels: digits touch as in clutter, yet stay apart enough to tell.
            if all(x + side - OVERLAP <= px or px + ps - OVERLAP <= x or y + side - OVERLAP <= py or py + ps - OVERLAP <= y
                   for px, py, ps in placed):
                break
        else:
            break  # no room left: the scene holds fewer digits
        index = int(rng.integers(len(digits)))
        patch = resize(digits[index].reshape(8, 8), side)
        ys, xs = np.nonzero(patch)
        canvas[y:y + side, x:x + side] = np.maximum(canvas[y:y + side, x:x + side], patch)
        placed.append((x, y, side))
        boxes.append([x + xs.min(), y + ys.min(), x + xs.max() + 1, y + ys.max() + 1])
        classes.append(int(labels[index]))
    speckles = rng.random((SIZE, SIZE)) < NOISE
    canvas[speckles] = np.maximum(canvas[speckles], rng.integers(1, 9, size=int(speckles.sum())))
    return canvas.astype(np.uint8), np.array(boxes, dtype=np.float32), np.array(classes, dtype=np.int64)


def scenes(seed: int, count: int, digits: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """``count`` scenes as padded arrays: images, boxes [n, 4, 4], classes [n, 4] (-1 = none), counts, scene."""
    rng = np.random.default_rng(seed)
    images = np.zeros((count, SIZE, SIZE), dtype=np.uint8)
    boxes = np.zeros((count, MAX_DIGITS, 4), dtype=np.float32)
    classes = np.full((count, MAX_DIGITS), -1, dtype=np.int64)
    counts = np.zeros(count, dtype=np.int64)
    for i in range(count):
        images[i], scene_boxes, scene_classes = compose(rng, digits, labels)
        counts[i] = len(scene_classes)
        boxes[i, :counts[i]], classes[i, :counts[i]] = scene_boxes, scene_classes
    return {"images": images, "boxes": boxes, "classes": classes, "counts": counts, "scene": counts - 1}


def truth_of(data: dict[str, np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(data["boxes"][i, :n], data["classes"][i, :n]) for i, n in enumerate(data["counts"])]


def grid_targets(data: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cell: objectness [n, g, g], class [n, g, g] (-1 = none), box [n, g, g, 4] (offsets, log sizes)."""
    cells = SIZE // STRIDE
    n = len(data["images"])
    objectness = np.zeros((n, cells, cells), dtype=np.float32)
    cls = np.full((n, cells, cells), -1, dtype=np.int64)
    box = np.zeros((n, cells, cells, 4), dtype=np.float32)
    for i, count in enumerate(data["counts"]):
        for (x0, y0, x1, y1), c in zip(data["boxes"][i, :count], data["classes"][i, :count], strict=True):
            cx, cy = (x0 + x1) / 2 / STRIDE, (y0 + y1) / 2 / STRIDE
            col, row = min(int(cx), cells - 1), min(int(cy), cells - 1)
            objectness[i, row, col], cls[i, row, col] = 1.0, c
            box[i, row, col] = [cx - col, cy - row, np.log((x1 - x0) / STRIDE), np.log((y1 - y0) / STRIDE)]
    return objectness, cls, box


def build_networks():
    import torch
    from torch import nn

    def backbone(width: int) -> nn.Sequential:
        # Two stride-2 convolutions: one feature per 4x4 cell, a receptive field of about 30 pixels.
        return nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(2 * width, 2 * width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(2 * width, 4 * width, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(4 * width, 4 * width, 3, padding=1), nn.ReLU(),
        )

    class Detector(nn.Module):
        """pixels [n, h, w] 0-16 -> per cell (h/4 x w/4): objectness, 10 class logits, 4 box terms."""

        def __init__(self) -> None:
            super().__init__()
            self.features = backbone(DETECTOR_WIDTH)
            self.head = nn.Conv2d(4 * DETECTOR_WIDTH, 1 + 10 + 4, 1)

        def raw(self, pixels: torch.Tensor) -> torch.Tensor:
            return self.head(self.features(pixels.unsqueeze(1) / 16.0)).permute(0, 2, 3, 1)

        def forward(self, pixels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            # The exported graph: every cell decoded to a candidate box in pixels, its score and class.
            grid = self.raw(pixels)
            rows = torch.arange(grid.shape[1], dtype=torch.float32).view(1, -1, 1)
            cols = torch.arange(grid.shape[2], dtype=torch.float32).view(1, 1, -1)
            cx = (cols + torch.sigmoid(grid[..., 11])) * STRIDE
            cy = (rows + torch.sigmoid(grid[..., 12])) * STRIDE
            half_w, half_h = torch.exp(grid[..., 13]) * STRIDE / 2, torch.exp(grid[..., 14]) * STRIDE / 2
            boxes = torch.stack([cx - half_w, cy - half_h, cx + half_w, cy + half_h], dim=-1)
            probabilities = torch.softmax(grid[..., 1:11], dim=-1)
            best, classes = probabilities.max(dim=-1)
            scores = torch.sigmoid(grid[..., 0]) * best
            n = grid.shape[0]
            return boxes.reshape(n, -1, 4), scores.reshape(n, -1), classes.reshape(n, -1)

    class SceneClassifier(nn.Module):
        """pixels [n, h, w] 0-16 -> label [n], probabilities [n, 4]."""

        def __init__(self) -> None:
            super().__init__()
            self.features = backbone(CLASSIFIER_WIDTH)
            self.head = nn.Linear(4 * CLASSIFIER_WIDTH, len(SCENE_LABELS))

        def logits(self, pixels: torch.Tensor) -> torch.Tensor:
            # Summed, not averaged, over the cells: a count does not shrink with a larger canvas.
            return self.head(self.features(pixels.unsqueeze(1) / 16.0).sum(dim=(2, 3)) / 36.0)

        def forward(self, pixels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            probabilities = torch.softmax(self.logits(pixels), dim=-1)
            return probabilities.argmax(dim=-1), probabilities

    return Detector(), SceneClassifier()


def train(detector, classifier, digits: np.ndarray, labels: np.ndarray) -> None:
    import torch
    import torch.nn.functional as F

    torch.manual_seed(SEED)
    parameters = list(detector.parameters()) + list(classifier.parameters())
    optimizer = torch.optim.Adam(parameters, lr=2e-3)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=TRAIN_STEPS)
    started = time.time()
    for step in range(TRAIN_STEPS):
        # Fresh scenes every step, from the training digits only.
        batch = scenes(SEED * 100_000 + step, BATCH, digits, labels)
        objectness, cls, box = (torch.from_numpy(a) for a in grid_targets(batch))
        pixels = torch.from_numpy(batch["images"].astype(np.float32))
        grid = detector.raw(pixels)
        positive = objectness > 0
        loss = F.binary_cross_entropy_with_logits(grid[..., 0], objectness, pos_weight=torch.tensor(4.0))
        loss = loss + F.cross_entropy(grid[..., 1:11][positive], cls[positive])
        predicted_box = torch.cat([torch.sigmoid(grid[..., 11:13]), grid[..., 13:15]], dim=-1)
        loss = loss + 2.0 * F.smooth_l1_loss(predicted_box[positive], box[positive], beta=0.1)
        loss = loss + F.cross_entropy(classifier.logits(pixels), torch.from_numpy(batch["scene"]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 250 == 0 or step == TRAIN_STEPS - 1:
            print(f"step {step:5d} loss {loss.item():.4f} ({time.time() - started:.0f} s)", flush=True)


def export(module, path: Path, outputs: list[str]) -> None:
    import torch

    module.eval()
    dynamic = {"pixels": {0: "n", 1: "height", 2: "width"}} | {name: {0: "n"} for name in outputs}
    torch.onnx.export(module, (torch.zeros(2, SIZE, SIZE),), str(path), input_names=["pixels"], output_names=outputs,
                      dynamic_axes=dynamic, opset_version=OPSET, dynamo=False)


def session(path: Path):
    import onnxruntime as ort

    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def detector_predictions(path: Path, images: np.ndarray) -> list[Detections]:
    boxes, scores, classes = session(path).run(None, {"pixels": images.astype(np.float32)})
    return detect(boxes, scores, classes, iou_threshold=IOU_THRESHOLD, score_threshold=SCORE_THRESHOLD)


def baseline(images: np.ndarray, digits_model: Path) -> tuple[list[Detections], np.ndarray]:
    """Connected components of pixels >= 4 larger than 6 pixels; each crop, padded square and resized to
    8x8, classified by ``digits-mlp`` (score: its confidence); the scene label from how many there are."""
    from scipy import ndimage

    classifier = session(digits_model)
    found, counts = [], []
    for image in images:
        components, _ = ndimage.label(image >= 4)
        boxes, crops = [], []
        for piece in ndimage.find_objects(components):
            ys, xs = piece
            if (ys.stop - ys.start) * (xs.stop - xs.start) < 6:
                continue
            side = max(ys.stop - ys.start, xs.stop - xs.start)
            crop = np.zeros((side, side), dtype=np.float64)
            crop[:ys.stop - ys.start, :xs.stop - xs.start] = image[piece]
            crop = np.roll(crop, ((side - (ys.stop - ys.start)) // 2, (side - (xs.stop - xs.start)) // 2), axis=(0, 1))
            positions = (np.arange(6) + 0.5) * side / 6 - 0.5  # an 8x8 digit's ink spans about its middle 6x6
            small = np.zeros((8, 8))
            small[1:7, 1:7] = ndimage.map_coordinates(crop, np.meshgrid(positions, positions, indexing="ij"), order=1)
            boxes.append([xs.start, ys.start, xs.stop, ys.stop])
            crops.append(np.clip(small, 0, 16).ravel())
        if crops:
            labels, probabilities = classifier.run(None, {"pixels": np.array(crops, dtype=np.float32)})
            found.append(Detections(np.array(boxes, dtype=np.float32), labels, probabilities.max(axis=1)))
        else:
            found.append(Detections(np.zeros((0, 4), np.float32), np.zeros(0, np.int64), np.zeros(0, np.float32)))
        counts.append(len(crops))
    return found, np.clip(np.array(counts), 1, MAX_DIGITS) - 1


def main() -> None:
    import onnx
    import torch

    torch.set_num_threads(1)  # the build shares its machine
    x_train, x_holdout, y_train, y_holdout = holdout_split()
    holdout = scenes(SEED + 1, HOLDOUT_SCENES, x_holdout, y_holdout)
    np.savez_compressed(HOLDOUT_FILE, **holdout)

    detector, classifier = build_networks()
    started = time.time()
    train(detector, classifier, x_train, y_train)
    train_seconds = time.time() - started
    detector_file, classifier_file = MODELS_DIR / f"{DETECTOR}.onnx", MODELS_DIR / f"{CLASSIFIER}.onnx"
    export(detector, detector_file, ["boxes", "scores", "classes"])
    export(classifier, classifier_file, ["label", "probabilities"])
    for path in (detector_file, classifier_file):
        onnx.checker.check_model(onnx.load(str(path)))

    truth = truth_of(holdout)
    map50 = mean_average_precision(detector_predictions(detector_file, holdout["images"]), truth)
    predicted_scene, _ = session(classifier_file).run(None, {"pixels": holdout["images"].astype(np.float32)})
    scene_accuracy = float((predicted_scene == holdout["scene"]).mean())
    base_found, base_scene = baseline(holdout["images"], MODELS_DIR / "digits-mlp.onnx")
    base_map50 = mean_average_precision(base_found, truth)
    base_scene_accuracy = float((base_scene == holdout["scene"]).mean())
    majority = float(np.bincount(holdout["scene"]).max() / len(holdout["scene"]))

    dataset = ("scenes composed from sklearn.datasets.load_digits (48x48, 1-4 digits scaled to 8-16 px, 3 % speckle "
               "noise); train and held-out scenes from disjoint digit images (build_digits.py's split)")
    common = {
        "holdout_size": HOLDOUT_SCENES,
        "holdout_digits": int(holdout["counts"].sum()),
        "source_digit_images": {"train": int(len(y_train)), "held_out": int(len(y_holdout))},
        "evaluated_with": f"onnxruntime on {HOLDOUT_FILE.name}",
    }
    built_with = {
        "dataset": dataset,
        "training": f"{TRAIN_STEPS} steps x {BATCH} fresh scenes, Adam one-cycle, both models together, "
                    f"{train_seconds:.0f} s on one CPU thread",
        "script": "models/build_scenes.py",
        "python": platform.python_version(),
        "torch": torch.__version__.split("+")[0],
        "onnx": onnx.__version__,
        "opset": OPSET,
    }
    pixels_input = [{"name": "pixels", "dtype": "float32", "shape": [None, None, None]}]
    update_manifest(
        models={
            DETECTOR: {
                "version": VERSION,
                "file": detector_file.name,
                "sha256": sha256_of(detector_file),
                "bytes": detector_file.stat().st_size,
                "task": "find the digits in a greyscale scene (pixels 0-16, any size): a candidate box per 4x4 cell; "
                        "non-maximum suppression at inference (inferbus_lambda.detection)",
                "inputs": pixels_input,
                "outputs": [
                    {"name": "boxes", "dtype": "float32", "shape": [None, None, 4]},
                    {"name": "scores", "dtype": "float32", "shape": [None, None]},
                    {"name": "classes", "dtype": "int64", "shape": [None, None]},
                ],
                "labels": list(range(10)),
                "detection": {"score_threshold": SCORE_THRESHOLD, "iou_threshold": IOU_THRESHOLD, "stride": STRIDE},
                "metrics": {
                    "holdout_map50": round(map50, 4),
                    "holdout_map50_baseline": round(base_map50, 4),
                    "baseline": "connected components of pixels >= 4, each crop classified by digits-mlp",
                    **common,
                },
                "built_with": built_with | {"estimator": "5-layer CNN, a grid of objectness + 10 classes + box per cell"},
            },
            CLASSIFIER: {
                "version": VERSION,
                "file": classifier_file.name,
                "sha256": sha256_of(classifier_file),
                "bytes": classifier_file.stat().st_size,
                "task": "label a greyscale scene (pixels 0-16, any size) by how many digits it holds",
                "inputs": pixels_input,
                "outputs": [
                    {"name": "label", "dtype": "int64", "shape": [None]},
                    {"name": "probabilities", "dtype": "float32", "shape": [None, len(SCENE_LABELS)]},
                ],
                "labels": SCENE_LABELS,
                "metrics": {
                    "holdout_scene_accuracy": round(scene_accuracy, 4),
                    "holdout_scene_accuracy_baseline": round(base_scene_accuracy, 4),
                    "holdout_majority_baseline": round(majority, 4),
                    "baseline": "the number of connected components of pixels >= 4 larger than 6 pixels",
                    **common,
                },
                "built_with": built_with | {"estimator": "5-layer CNN, summed over cells, linear head"},
            },
        },
        datasets={
            HOLDOUT_FILE.name: {
                "sha256": sha256_of(HOLDOUT_FILE),
                "arrays": {"images": "uint8 [n, 48, 48]", "boxes": "float32 [n, 4, 4] x0 y0 x1 y1",
                           "classes": "int64 [n, 4], -1 = no digit", "counts": "int64 [n]",
                           "scene": "int64 [n], index into scene-classifier's labels"},
                "source": "scenes composed from the held-out split of sklearn.datasets.load_digits (models/build_scenes.py)",
            }
        },
    )
    print(f"{DETECTOR}: mAP@0.5 {map50:.4f} (baseline {base_map50:.4f}); {CLASSIFIER}: scene accuracy "
          f"{scene_accuracy:.4f} (baseline {base_scene_accuracy:.4f}, majority {majority:.4f}) on {HOLDOUT_SCENES} "
          f"held-out scenes; trained in {train_seconds:.0f} s")
    print(f"wrote {detector_file.name} ({detector_file.stat().st_size} bytes), {classifier_file.name} "
          f"({classifier_file.stat().st_size} bytes), {HOLDOUT_FILE.name}")


if __name__ == "__main__":
    main()
