"""Object detection in numpy: candidate boxes -> non-maximum suppression; mean average precision.

A detector graph ends in candidate boxes (one per grid cell, anchor, ...), each with a score and a
class; which of them are objects is decided here, in numpy, so a function never needs torch or
torchvision and any detector exported to ONNX fits: its graph outputs ``boxes`` [n, k, 4] as
``[x0, y0, x1, y1]`` in pixels, ``scores`` [n, k] and ``classes`` [n, k] (see
``models/build_scenes.py`` for one, and docs/extending.md).

Example
-------
>>> import numpy as np
>>> boxes = np.array([[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]], dtype=np.float32)
>>> keep = non_max_suppression(boxes, np.array([0.9, 0.8, 0.7]), np.array([3, 3, 3]), iou_threshold=0.5)
>>> keep.tolist()
[0, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Detections", "box_iou", "detect", "mean_average_precision", "non_max_suppression"]


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of every box of ``a`` [n, 4] with every box of ``b`` [m, 4]: [n, m].

    Boxes are ``[x0, y0, x1, y1]`` with ``x1 >= x0`` and ``y1 >= y0``; two empty boxes have IoU 0.
    """
    a, b = np.asarray(a, dtype=np.float64).reshape(-1, 4), np.asarray(b, dtype=np.float64).reshape(-1, 4)
    width = np.clip(np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]), 0, None)
    height = np.clip(np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]), 0, None)
    inter = width * height
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def non_max_suppression(boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, *,
                        iou_threshold: float = 0.5, score_threshold: float = 0.0,
                        max_detections: int | None = None) -> np.ndarray:
    """Indices of the boxes to keep, best score first: per class, greedily, a box is dropped when it
    overlaps a kept box of the same class by more than ``iou_threshold``.

    Parameters
    ----------
    boxes, scores, classes
        [k, 4] ``[x0, y0, x1, y1]``, [k] and [k]: the candidates of ONE image.
    iou_threshold
        Overlap above which the lower-scored of two same-class boxes is suppressed.
    score_threshold
        Candidates scoring below it are never kept.
    max_detections
        At most this many are returned (all when ``None``).
    """
    boxes, scores, classes = np.asarray(boxes).reshape(-1, 4), np.asarray(scores).ravel(), np.asarray(classes).ravel()
    candidates = np.flatnonzero(scores >= score_threshold)
    order = candidates[np.argsort(-scores[candidates], kind="stable")]
    keep: list[int] = []
    suppressed = np.zeros(len(scores), dtype=bool)
    for position, index in enumerate(order):
        if suppressed[index]:
            continue
        keep.append(int(index))
        if max_detections is not None and len(keep) == max_detections:
            break
        rest = order[position + 1:]
        rest = rest[(classes[rest] == classes[index]) & ~suppressed[rest]]
        suppressed[rest[box_iou(boxes[index], boxes[rest])[0] > iou_threshold]] = True
    return np.array(keep, dtype=np.int64)


@dataclass(frozen=True)
class Detections:
    """What one image holds, best score first: ``boxes`` [d, 4], ``classes`` [d], ``scores`` [d]."""

    boxes: np.ndarray
    classes: np.ndarray
    scores: np.ndarray


def detect(boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, *, iou_threshold: float = 0.5,
           score_threshold: float = 0.3, max_detections: int = 100) -> list[Detections]:
    """A detector graph's batched candidates (``boxes`` [n, k, 4], ``scores`` [n, k], ``classes`` [n, k])
    -> each image's :class:`Detections` after :func:`non_max_suppression`."""
    found = []
    for image_boxes, image_scores, image_classes in zip(boxes, scores, classes, strict=True):
        keep = non_max_suppression(image_boxes, image_scores, image_classes, iou_threshold=iou_threshold,
                                   score_threshold=score_threshold, max_detections=max_detections)
        found.append(Detections(image_boxes[keep], image_classes[keep], image_scores[keep]))
    return found


def _average_precision(recall: np.ndarray, precision: np.ndarray) -> float:
    # The area under the precision envelope (every-point interpolation, as PASCAL VOC from 2010 and COCO).
    recall = np.concatenate([[0.0], recall, [1.0]])
    precision = np.concatenate([[0.0], precision, [0.0]])
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    steps = np.flatnonzero(recall[1:] != recall[:-1])
    return float(np.sum((recall[steps + 1] - recall[steps]) * precision[steps + 1]))


def mean_average_precision(predicted: Sequence[Detections], truth: Sequence[tuple[np.ndarray, np.ndarray]], *,
                           iou_threshold: float = 0.5) -> float:
    """mAP@``iou_threshold``: the mean over the classes present in ``truth`` of each class's average precision.

    Parameters
    ----------
    predicted
        Per image, what a detector found.
    truth
        Per image, ``(boxes [t, 4], classes [t])``.
    iou_threshold
        A detection is a true positive when it overlaps a not yet matched true box of its class by at
        least this much (the best-scored detection matches first), as PASCAL VOC.
    """
    if len(predicted) != len(truth):
        raise ValueError(f"{len(predicted)} predictions for {len(truth)} images")
    classes = sorted({int(c) for _, true_classes in truth for c in np.asarray(true_classes).ravel()})
    precisions = []
    for cls in classes:
        rows: list[tuple[float, bool]] = []
        total = 0
        for found, (true_boxes, true_classes) in zip(predicted, truth, strict=True):
            mine = np.asarray(true_boxes).reshape(-1, 4)[np.asarray(true_classes).ravel() == cls]
            total += len(mine)
            matched = np.zeros(len(mine), dtype=bool)
            ours = np.flatnonzero(np.asarray(found.classes) == cls)
            ours = ours[np.argsort(-np.asarray(found.scores)[ours], kind="stable")]
            overlaps = box_iou(np.asarray(found.boxes)[ours], mine)
            for row, index in enumerate(ours):
                best = int(np.argmax(overlaps[row])) if len(mine) else -1
                hit = best >= 0 and overlaps[row, best] >= iou_threshold and not matched[best]
                if hit:
                    matched[best] = True
                rows.append((float(found.scores[index]), bool(hit)))
        rows.sort(key=lambda row: -row[0])
        hits = np.array([hit for _, hit in rows], dtype=np.float64)
        true_positives, false_positives = np.cumsum(hits), np.cumsum(1.0 - hits)
        recall = true_positives / total
        precision = true_positives / np.maximum(true_positives + false_positives, np.finfo(np.float64).eps)
        precisions.append(_average_precision(recall, precision))
    return float(np.mean(precisions)) if precisions else 0.0
