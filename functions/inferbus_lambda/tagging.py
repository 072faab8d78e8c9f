"""Sequence tagging in numpy + onnxruntime: words with character offsets, their features, BIO spans.

One module for both sides of a tagger: ``models/build_tagging.py`` trains on the features
:func:`word_features` computes, and a function computes the same features at inference, so
training and serving cannot drift apart. A tagger graph takes, for ONE sentence of T words:

- ``word_ids``  int64 [1, T]     the normalised word's row in the model's vocabulary (0 padding,
  1 unknown); the vocabulary travels inside the ONNX file (metadata ``vocabulary``, one word a line)
- ``chars``     int64 [1, T, C]  the word's UTF-8 bytes + 1, cut or padded (0) to ``MAX_CHARS``
- ``suffixes``  int64 [1, T]     the lower-cased last three characters, hashed (crc32) into buckets
- ``shape``     float32 [1, T, S] capitalisation and digit flags (:data:`SHAPE_FEATURES`)
- ``upos``      int64 [1, T]     (a recogniser only) the part-of-speech tags of the words

and returns ``scores`` float32 [1, T, tags]: log-probabilities per tag, in the order of the
manifest's ``labels``.

Example
-------
>>> [w.text for w in split_words("Dr. Smith's flat isn't in London.")]
['Dr.', 'Smith', "'s", 'flat', 'is', "n't", 'in', 'London', '.']
>>> decode_bio(np.log(np.array([[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]])), ["O", "B-PER", "I-PER"])
['B-PER', 'I-PER', 'O']
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from .inference import OnnxModel, load_session
from .manifest import ModelInfo
from .words import Word, normalise, read_words, sentence_bounds, split_words

__all__ = ["MAX_CHARS", "SHAPE_FEATURES", "SUFFIX_BUCKETS", "SequenceTagger", "Span", "Word", "bio_spans",
           "decode_bio", "normalise", "read_words", "sentence_bounds", "split_words", "word_features"]

MAX_CHARS = 16
SUFFIX_BUCKETS = 4096
PAD, UNKNOWN = 0, 1
SHAPE_FEATURES = ("initial_capital", "all_capitals", "has_digit", "all_digits", "has_hyphen", "punctuation",
                  "mixed_case", "sentence_start")

@dataclass(frozen=True)
class Span:
    """An entity over words ``first..last`` (inclusive) of a sentence."""

    type: str
    first: int
    last: int


def _hash(text: str, buckets: int) -> int:
    # crc32, not hash(): the same bucket in every process (Python salts str hashes).
    return 1 + zlib.crc32(text.encode("utf-8")) % (buckets - 1)


def _shape(word: str, position: int) -> list[float]:
    letters = [c for c in word if c.isalpha()]
    return [
        float(word[:1].isupper()),
        float(bool(letters) and all(c.isupper() for c in letters)),
        float(any(c.isdigit() for c in word)),
        float(word.isdigit()),
        float("-" in word),
        float(all(not c.isalnum() for c in word)),
        float(any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)),
        float(position == 0),
    ]


def word_features(words: Sequence[str], vocabulary: Mapping[str, int]) -> dict[str, np.ndarray]:
    """The tagger's inputs for one sentence (batch of 1), as the module docstring lists them."""
    chars = np.zeros((1, len(words), MAX_CHARS), dtype=np.int64)
    for i, word in enumerate(words):
        encoded = word.encode("utf-8")[:MAX_CHARS]
        chars[0, i, : len(encoded)] = np.frombuffer(encoded, dtype=np.uint8).astype(np.int64) + 1
    return {
        "word_ids": np.array([[vocabulary.get(normalise(w), UNKNOWN) for w in words]], dtype=np.int64),
        "chars": chars,
        "suffixes": np.array([[_hash(w.lower()[-3:], SUFFIX_BUCKETS) for w in words]], dtype=np.int64),
        "shape": np.array([[_shape(w, i) for i, w in enumerate(words)]], dtype=np.float32).reshape(1, len(words), -1),
    }


def decode_bio(scores: np.ndarray, labels: Sequence[str]) -> list[str]:
    """The best tag sequence under BIO's rule (``I-X`` only after ``B-X`` or ``I-X``): Viterbi over
    per-word log-probabilities ``scores`` [T, tags], so a lone ``I-X`` never reaches the output."""
    allowed = np.zeros((len(labels), len(labels)), dtype=np.float64)  # [previous, next]; -inf where BIO forbids
    for j, label in enumerate(labels):
        if label.startswith("I-"):
            allowed[:, j] = -np.inf
            for i, previous in enumerate(labels):
                if previous[2:] == label[2:] and previous[:2] in ("B-", "I-"):
                    allowed[i, j] = 0.0
    start = np.array([-np.inf if label.startswith("I-") else 0.0 for label in labels])
    best = scores[0].astype(np.float64) + start
    back = np.zeros(scores.shape, dtype=np.int64)
    for t in range(1, len(scores)):
        candidates = best[:, None] + allowed  # [previous, next]
        back[t] = candidates.argmax(axis=0)
        best = candidates.max(axis=0) + scores[t]
    path = [int(best.argmax())]
    for t in range(len(scores) - 1, 0, -1):
        path.append(int(back[t][path[-1]]))
    return [labels[j] for j in reversed(path)]


def bio_spans(tags: Sequence[str]) -> list[Span]:
    """The entities of a BIO tag sequence; an ``I-X`` that does not continue an ``X`` starts one."""
    spans: list[Span] = []
    for i, tag in enumerate(tags):
        if tag == "O" or tag[:2] not in ("B-", "I-"):
            continue
        kind = tag[2:]
        if tag.startswith("I-") and spans and spans[-1].type == kind and spans[-1].last == i - 1:
            spans[-1] = Span(kind, spans[-1].first, i)
        else:
            spans.append(Span(kind, i, i))
    return spans


class SequenceTagger(OnnxModel):
    """A tagger graph of :mod:`.tagging`'s inputs: one ``session.run`` per sentence.

    ``labels`` (the manifest's) name the score columns; the vocabulary (and, for a recogniser,
    the part-of-speech labels its ``upos`` input counts in) come from the ONNX file's metadata.
    """

    def __init__(self, session: Any, *, name: str, version: str, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(session, name=name, version=version, metadata=metadata)
        properties = session.get_modelmeta().custom_metadata_map
        self.vocabulary = {word: row for row, word in enumerate(properties["vocabulary"].split("\n"), start=2)}
        self.upos_labels = properties["upos_labels"].split("\n") if "upos_labels" in properties else []

    @classmethod
    def from_info(cls, info: ModelInfo) -> Self:
        """Open a tagger of the manifest."""
        return cls(load_session(info.path), name=info.name, version=info.version, metadata=info.metadata)

    def scores(self, words: Sequence[str], upos: Sequence[str] | None = None) -> np.ndarray:
        """Log-probabilities [T, tags] for the words of one sentence (``upos`` for a recogniser)."""
        if not words:
            return np.zeros((0, len(self.labels)), dtype=np.float32)
        feeds = word_features(words, self.vocabulary)
        if "upos" in self.input_types:
            if upos is None or len(upos) != len(words):
                raise ValueError(f"{self.name} needs one part-of-speech tag per word")
            index = {label: i for i, label in enumerate(self.upos_labels)}
            unknown = sorted(set(upos) - set(index))
            if unknown:
                raise ValueError(f"{self.name} does not know the part-of-speech tags {unknown}")
            feeds["upos"] = np.array([[index[tag] for tag in upos]], dtype=np.int64)
        return self.run(feeds)["scores"][0]

    def tag_text(self, words: Sequence[str], upos: Sequence[str] | None = None) -> list[str]:
        """One tag per word of a text of any number of sentences, tagged sentence by sentence."""
        tags: list[str] = []
        for first, end in sentence_bounds(words):
            tags += self.tag(words[first:end], None if upos is None else upos[first:end])
        return tags

    def tag(self, words: Sequence[str], upos: Sequence[str] | None = None) -> list[str]:
        """One tag per word of a sentence: the best of each word's scores, or for BIO labels the best valid
        sequence."""
        scores = self.scores(words, upos)
        if any(str(label).startswith(("B-", "I-")) for label in self.labels):
            return decode_bio(scores, [str(label) for label in self.labels]) if len(words) else []
        return [str(self.labels[j]) for j in scores.argmax(axis=1)]
