"""Non-maximum suppression and mean average precision in numpy (inferbus_lambda.detection), checked
against hand-worked cases and against a brute-force reading of their definitions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from inferbus_lambda.detection import Detections, box_iou, detect, mean_average_precision, non_max_suppression


def test_iou_of_known_boxes():
    a = np.array([[0, 0, 10, 10]])
    b = np.array([[0, 0, 10, 10], [5, 0, 15, 10], [10, 10, 20, 20], [2, 2, 4, 4], [3, 3, 3, 3]])
    assert box_iou(a, b)[0].tolist() == pytest.approx([1.0, 50 / 150, 0.0, 4 / 100, 0.0])
    assert box_iou(np.zeros((0, 4)), b).shape == (0, 5)


def brute_force_nms(boxes, scores, classes, iou_threshold, score_threshold):
    """The definition, read literally: walk the boxes best first; keep one unless a kept box of its class
    overlaps it by more than the threshold."""
    kept = []
    for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i)):
        if scores[i] < score_threshold:
            continue
        if all(classes[j] != classes[i] or box_iou(boxes[i], boxes[j])[0, 0] <= iou_threshold for j in kept):
            kept.append(i)
    return kept


def test_nms_keeps_the_best_of_overlapping_boxes_of_one_class_only():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 10], [30, 30, 40, 40]], dtype=np.float32)
    scores = np.array([0.6, 0.9, 0.8, 0.2])
    classes = np.array([4, 4, 5, 4])
    # 1 suppresses 0 (same class, IoU 0.68); 2 overlaps 1 as much but is another class; 3 overlaps nothing.
    assert non_max_suppression(boxes, scores, classes, iou_threshold=0.5).tolist() == [1, 2, 3]
    assert non_max_suppression(boxes, scores, classes, iou_threshold=0.5, score_threshold=0.5).tolist() == [1, 2]
    assert non_max_suppression(boxes, scores, classes, iou_threshold=0.5, max_detections=1).tolist() == [1]
    assert non_max_suppression(boxes, scores, classes, iou_threshold=0.9).tolist() == [1, 2, 0, 3]
    assert non_max_suppression(np.zeros((0, 4)), np.zeros(0), np.zeros(0)).tolist() == []


@pytest.mark.parametrize("seed", range(20))
def test_nms_matches_its_definition_on_random_clutter(seed):
    rng = np.random.default_rng(seed)
    corners = rng.uniform(0, 40, size=(60, 2))
    boxes = np.concatenate([corners, corners + rng.uniform(2, 15, size=(60, 2))], axis=1)
    scores, classes = rng.random(60), rng.integers(0, 3, size=60)
    threshold = float(rng.uniform(0.2, 0.7))
    assert non_max_suppression(boxes, scores, classes, iou_threshold=threshold, score_threshold=0.1).tolist() == \
        brute_force_nms(boxes, scores, classes, threshold, 0.1)


def test_detect_runs_nms_per_image_of_a_batch():
    boxes = np.array([[[0, 0, 8, 8], [0, 0, 8, 9]], [[0, 0, 8, 8], [20, 20, 28, 28]]], dtype=np.float32)
    scores = np.array([[0.9, 0.8], [0.1, 0.7]], dtype=np.float32)
    classes = np.array([[1, 1], [2, 2]])
    first, second = detect(boxes, scores, classes, score_threshold=0.3)
    assert first.boxes.tolist() == [[0, 0, 8, 8]] and first.classes.tolist() == [1]
    assert second.boxes.tolist() == [[20, 20, 28, 28]] and second.scores.tolist() == pytest.approx([0.7])


def found(*rows):
    """Detections from (box, class, score) rows."""
    return Detections(np.array([r[0] for r in rows], dtype=np.float32).reshape(-1, 4),
                      np.array([r[1] for r in rows], dtype=np.int64), np.array([r[2] for r in rows], dtype=np.float32))


BOX_A, BOX_B = [0, 0, 10, 10], [20, 20, 30, 30]


def test_map_of_perfect_detections_is_one_and_of_none_is_zero():
    truth = [(np.array([BOX_A, BOX_B]), np.array([3, 7]))]
    assert mean_average_precision([found((BOX_A, 3, 0.9), (BOX_B, 7, 0.8))], truth) == 1.0
    assert mean_average_precision([found()], truth) == 0.0
    # The right place, the wrong class: no hit for either class.
    assert mean_average_precision([found((BOX_A, 7, 0.9), (BOX_B, 3, 0.8))], truth) == 0.0


def test_map_worked_by_hand():
    # One class, three true boxes over two images; four detections ranked: hit, miss, hit, duplicate.
    truth = [(np.array([BOX_A, BOX_B]), np.array([1, 1])), (np.array([BOX_A]), np.array([1]))]
    predicted = [found((BOX_A, 1, 0.9), ([50, 50, 60, 60], 1, 0.8), ([0, 0, 10, 11], 1, 0.5)),
                 found((BOX_A, 1, 0.7))]
    # Ranked: 0.9 hit, 0.8 miss, 0.7 hit, 0.5 duplicate of a matched box (a miss). Recall 1/3, 1/3, 2/3, 2/3;
    # precision 1, 1/2, 2/3, 1/2. Envelope: 1 up to recall 1/3, 2/3 up to 2/3: AP = 1/3 + 1/3 * 2/3.
    assert mean_average_precision(predicted, truth) == pytest.approx(1 / 3 + 2 / 9)
    # An IoU of 0.5 hits at 0.5 and misses at 0.6.
    half = [20, 20, 30, 40]  # IoU with BOX_B: 100 / 200
    assert mean_average_precision([found((half, 1, 0.9))], [(np.array([BOX_B]), np.array([1]))]) == 1.0
    assert mean_average_precision([found((half, 1, 0.9))], [(np.array([BOX_B]), np.array([1]))], iou_threshold=0.6) == 0.0


def test_map_averages_over_the_classes_present():
    truth = [(np.array([BOX_A, BOX_B]), np.array([0, 1]))]
    # Class 0 found, class 1 missed; a detection of class 9 (absent from the truth) adds no class to the mean.
    assert mean_average_precision([found((BOX_A, 0, 0.9), (BOX_B, 9, 0.9))], truth) == 0.5


def test_map_does_not_depend_on_the_order_of_detections_within_an_image():
    rng = np.random.default_rng(3)
    rows = [(list(b), int(c), float(s)) for b, c, s in zip(rng.uniform(0, 30, (6, 4)).cumsum(axis=1).round(),
                                                            rng.integers(0, 2, 6), rng.random(6), strict=True)]
    truth = [(np.array([r[0] for r in rows[:3]]), np.array([r[1] for r in rows[:3]]))]
    values = {round(mean_average_precision([found(*order)], truth), 12) for order in itertools.permutations(rows, 6)}
    assert len(values) == 1
