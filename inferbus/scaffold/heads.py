"""Is a model's one float output class scores or regression targets? And, for a classifier, how good is it?

A PyTorch export ends in a ``[batch, K]`` float tensor: K logits of a classifier, or K regression
targets; nothing in the tensor's type says which. The scaffold decides on evidence, in this order:

1. ``--task classifier|regressor`` always wins; ``--labels a,b,c`` means classifier.
2. The graph: the output's name (``logits``, ``scores``, ``probabilities``, ``output_label``, ...),
   the node that makes it (``Softmax``, ``LogSoftmax``; ``Sigmoid`` for one column; read with
   ``onnx`` when it is installed), rows that already sum to 1.
3. The samples: for K >= 2 columns, true labels that are strings, or whole numbers in ``0..K-1``
   (a regressor's truth is not one class per row).
4. Nothing: K >= 2 columns are read as K regression targets (the safer reading: every value is
   published as it is), and one line says so and names ``--task classifier``. One column without
   graph evidence stays a regressor (samples alone do not make a 0/1 target a class).

The head says how class probabilities come out of the output: ``logits`` (softmax), ``probabilities``
(as they are), one ``logit`` (sigmoid: the positive class's probability) or one ``probability``.

Example
-------
>>> choose_head("logits", 3, final_op=None, distribution=False, sample_labels=None, labels=None, task=None)[0]
'logits'
>>> head, reading = choose_head("output", 3, final_op=None, distribution=False, sample_labels=None, labels=None,
...                             task=None)
>>> head, reading.split(";")[1]
(None, ' pass --task classifier if they are class logits')
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .errors import ScaffoldError

__all__ = ["Head", "HeldOutAccuracy", "Task", "choose_head", "class_probabilities", "head_labels",
           "held_out_accuracy", "parse_labels", "predicted_labels"]

Head = Literal["logits", "probabilities", "logit", "probability"]
Task = Literal["classifier", "regressor"]
# Words in an output's name that mark class scores (for one column: only the ones that say logit or probability).
CLASS_WORDS = frozenset({"logit", "logits", "score", "scores", "prob", "probs", "proba", "probability",
                         "probabilities", "class", "classes", "label", "labels", "softmax", "sigmoid"})
BINARY_WORDS = frozenset({"logit", "logits", "prob", "proba", "probability", "probabilities", "sigmoid"})
PROBABILITY_WORDS = frozenset({"prob", "probs", "proba", "probability", "probabilities", "sigmoid", "softmax"})
SOFTMAX_OPS = frozenset({"Softmax", "LogSoftmax"})


def _words(name: str) -> set[str]:
    """``output_label`` -> {output, label}; ``classLogits`` -> {class, logits}."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return {word.lower() for word in re.split(r"[^A-Za-z0-9]+", spaced) if word}


def _class_truths(sample_labels: Sequence[Any] | None, columns: int) -> bool:
    """The samples' truths read as one class per row of ``columns`` scores: strings, or whole numbers 0..K-1."""
    truths = [value for value in (sample_labels or ()) if value is not None]
    if not truths:
        return False
    if all(isinstance(value, str) for value in truths):
        return 2 <= len(set(truths)) <= columns
    numbers = np.asarray(truths, dtype=np.float64)
    return bool(np.all(np.mod(numbers, 1) == 0) and numbers.min() >= 0 and numbers.max() < columns)


def _head(columns: int, name: str, op: str | None, distribution: bool) -> Head:
    """How probabilities come out of an output that is class scores."""
    if columns == 1:
        return "probability" if op == "Sigmoid" or _words(name) & PROBABILITY_WORDS else "logit"
    if op == "LogSoftmax":
        return "logits"  # log-probabilities: softmax gives the probabilities back
    return "probabilities" if distribution or op == "Softmax" else "logits"


def choose_head(name: str, columns: int, *, final_op: str | None, distribution: bool,
                sample_labels: Sequence[Any] | None, labels: Sequence[Any] | None,
                task: Task | None) -> tuple[Head | None, str | None]:
    """Read a model's one float output ``name`` of ``columns`` values per row as class scores, or not.

    Parameters
    ----------
    name, columns
        The output's name and its values per row (1 for ``[N]`` or ``[N, 1]``).
    final_op
        The type of the node that makes it, when known (read with ``onnx``, see :mod:`.graph`).
    distribution
        Its rows, on the probe inputs, are probabilities that sum to 1.
    sample_labels
        The true labels of ``--samples``, if any.
    labels, task
        ``--labels`` and ``--task``.

    Returns
    -------
    tuple
        The head (``None``: a regressor) and the one line to print about the choice (``None`` when a
        flag made it, or when one column is read as a regressor, the common case).
    """
    if task == "regressor":
        return None, None
    words = _words(name)
    shape = f"[N, {columns}]" if columns > 1 else "[N, 1]"
    if task == "classifier" or labels is not None:
        return _head(columns, name, final_op, distribution), None
    if columns == 1:
        evidence = ("its last node is a Sigmoid" if final_op == "Sigmoid" else
                    f"its name says {min(words & BINARY_WORDS)}" if words & BINARY_WORDS else None)
    else:
        evidence = (f"its name says {min(words & CLASS_WORDS)}" if words & CLASS_WORDS else
                    f"its last node is a {final_op}" if final_op in SOFTMAX_OPS else
                    "its rows sum to 1" if distribution else
                    "the samples' labels are classes" if _class_truths(sample_labels, columns) else None)
    if evidence is None:
        if columns == 1:
            return None, None
        return None, (f"read output {name!r} {shape} as {columns} regression targets (nothing marks them as class "
                      "scores); pass --task classifier if they are class logits")
    head = _head(columns, name, final_op, distribution)
    what = {"logits": "class logits (softmax at inference)", "probabilities": "class probabilities",
            "logit": "one logit of a binary classifier (sigmoid at inference)",
            "probability": "a binary classifier's probability of its second class"}[head]
    return head, (f"read output {name!r} {shape} as {what}: {evidence}; pass --task regressor if it is "
                  f"{'a regression target' if columns == 1 else f'{columns} regression targets'}")


def parse_labels(text: str) -> tuple[int | str, ...]:
    """``--labels a,b,c`` as class labels; labels that are all whole numbers become ints (``0,1`` -> ``(0, 1)``).

    >>> parse_labels("amber, ruby,straw"), parse_labels("0,1")
    (('amber', 'ruby', 'straw'), (0, 1))
    """
    labels = [part.strip() for part in text.split(",")]
    if any(not label for label in labels):
        raise ScaffoldError(f"--labels {text!r}: write the class names separated by commas, none empty (a,b,c)")
    if len(set(labels)) != len(labels):
        raise ScaffoldError(f"--labels {text!r}: each class once")
    if all(re.fullmatch(r"-?\d+", label) for label in labels):
        return tuple(int(label) for label in labels)
    return tuple(labels)


def head_labels(head: Head, columns: int, labels: Sequence[int | str] | None,
                sample_labels: Sequence[Any] | None) -> tuple[tuple[int | str, ...], str | None]:
    """A classifier's labels in the order of its scores, and a note on where they came from when it is a guess.

    From ``--labels`` (exactly one per class, negative class first for a binary model); else the
    samples' labels (whole numbers ``0..K-1``, or their distinct strings sorted, as a label encoder
    orders them); else the class indices as strings.

    Parameters
    ----------
    head, columns
        From :func:`choose_head`; the output's values per row (a one-column head has 2 classes).
    labels
        ``--labels`` (:func:`parse_labels`), or ``None``.
    sample_labels
        The true labels of ``--samples``, or ``None``.

    Returns
    -------
    tuple
        The labels, and the note to print when they are a guess (``None`` when ``--labels`` or class
        indices in the samples gave them).

    Raises
    ------
    ScaffoldError
        ``--labels`` of the wrong count, or samples whose labels cannot be this model's classes.
    """
    classes = 2 if head in ("logit", "probability") else columns
    if labels is not None:
        if len(labels) != classes:
            binary = " (a one-column model is binary: the negative class first)" if columns == 1 else ""
            raise ScaffoldError(f"--labels gives {len(labels)} classes but the model scores {classes}{binary}: give "
                                f"{classes} labels in the order of its scores")
        return tuple(labels), None
    truths = [value for value in (sample_labels or ()) if value is not None]
    if not truths:
        return tuple(str(k) for k in range(classes)), (f"no labels given: classes are named by index "
                                                      f"{', '.join(str(k) for k in range(classes))}; pass --labels "
                                                      "a,b,... in the order of the model's scores")
    if all(isinstance(value, str) for value in truths):
        distinct = tuple(sorted(set(truths)))
        if len(distinct) != classes:
            raise ScaffoldError(f"--samples carry {len(distinct)} distinct labels but the model scores {classes} "
                                f"classes: pass --labels with {classes} names in the order of its scores")
        return distinct, (f"class names {', '.join(distinct)} are the samples' labels, sorted; if the accuracy reads "
                          "low, pass --labels in the order of the model's scores")
    numbers = np.asarray(truths, dtype=np.float64)
    if not (np.all(np.mod(numbers, 1) == 0) and numbers.min() >= 0 and numbers.max() < classes):
        raise ScaffoldError(f"--samples labels run from {numbers.min():g} to {numbers.max():g}, not class indices "
                            f"0..{classes - 1}: pass --labels, or --task regressor if these are targets")
    return tuple(range(classes)), None


def class_probabilities(head: Head, values: np.ndarray) -> np.ndarray:
    """``[N, classes]`` probabilities from the raw output, as the generated handler computes them (numpy only)."""
    rows = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
    if head == "logits":
        exponentials = np.exp(rows - rows.max(axis=1, keepdims=True))
        return exponentials / exponentials.sum(axis=1, keepdims=True)
    if head == "probabilities":
        return rows
    positive = np.exp(-np.logaddexp(0.0, -rows[:, 0])) if head == "logit" else np.clip(rows[:, 0], 0.0, 1.0)
    return np.stack([1.0 - positive, positive], axis=1)


@dataclass(frozen=True)
class HeldOutAccuracy:
    """A classifier's accuracy on the ``--samples`` rows that carry a label, beside always answering the most
    common label."""

    accuracy: float
    size: int
    majority_class: int | str
    majority_accuracy: float

    def metrics(self, samples_file: str, component: str, runtime: str) -> dict[str, Any]:
        """The manifest's ``metrics`` entry."""
        return {
            "holdout_accuracy": round(self.accuracy, 4),
            "holdout_size": self.size,
            "holdout_majority_baseline": round(self.majority_accuracy, 4),
            "majority_class": self.majority_class,
            "evaluated_with": f"{runtime} on {samples_file} by `inferbus new consumer {component}`",
            "note": ("measured on the --samples rows: held out only if the model never saw them in training; say "
                     "where they come from in the datasets entry"),
        }


def held_out_accuracy(predicted: Sequence[Any], truths: Sequence[Any],
                      labels: Sequence[int | str] | None) -> HeldOutAccuracy | None:
    """Accuracy of ``predicted`` against the rows of ``truths`` that carry a label (``None`` and NaN do not).

    Parameters
    ----------
    predicted
        The label each row's result carries (:func:`predicted_labels`).
    truths
        The samples' true labels, one per row.
    labels
        The classifier's labels: truths that are class indices are compared by index when these
        are names.

    Returns
    -------
    HeldOutAccuracy or None
        ``None`` when no row carries a label.

    >>> held_out_accuracy(["a", "b", "b", "a"], ["a", "b", "a", None], ("a", "b"))
    HeldOutAccuracy(accuracy=0.6666666666666666, size=3, majority_class='a', majority_accuracy=0.6666666666666666)
    """
    named = labels is not None and any(isinstance(label, str) for label in labels)
    pairs = []
    for guess, truth in zip(predicted, truths, strict=True):
        if truth is None or (isinstance(truth, float) and np.isnan(truth)):
            continue
        if isinstance(truth, (int, float, np.integer, np.floating)) and float(truth) == int(truth):
            truth = int(truth)
            if named and labels is not None and 0 <= truth < len(labels) and not isinstance(guess, (int, np.integer)):
                truth = labels[truth]
        pairs.append((guess.item() if isinstance(guess, np.generic) else guess, truth))
    if not pairs:
        return None
    counts = Counter(truth for _, truth in pairs)
    majority, majority_count = counts.most_common(1)[0]
    return HeldOutAccuracy(sum(guess == truth for guess, truth in pairs) / len(pairs), len(pairs), majority,
                           majority_count / len(pairs))


def predicted_labels(head: Head | None, labels: Sequence[int | str] | None, label_values: Any,
                     score_values: Any) -> list[Any]:
    """The label a classifier's result carries for each row: the graph's label output, or the label of the
    highest probability."""
    if head is None:
        return [value.item() if isinstance(value, np.generic) else value for value in np.asarray(label_values).ravel()]
    assert labels is not None
    return [labels[k] for k in class_probabilities(head, np.asarray(score_values)).argmax(axis=1)]
