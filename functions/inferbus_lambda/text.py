"""Text models: the MiniLM tokenizer and the ONNX sentence encoder, with per-batch padding.

Texts are tokenized without padding; a batch is padded only to its own longest text
(fixed 128-token padding costs about 2.6x on short texts). The encoder graph pools and
L2-normalises in the graph, so one ``session.run`` returns sentence embeddings.

Example
-------
>>> tokenizer = TextTokenizer.load("models/minilm-tokenizer.json", max_tokens=256)  # doctest: +SKIP
>>> encoder = TextEncoder.load("models/minilm-l6-int8.onnx", name="minilm-l6-int8", version="1.0.0")  # doctest: +SKIP
>>> tokens = tokenizer.encode(["Great service.", "The parcel never arrived and nobody answered."])  # doctest: +SKIP
>>> encoder.embed([t.input_ids for t in tokens]).vectors.shape  # doctest: +SKIP
(2, 384)
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .manifest import ModelInfo, resolve_model_path

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Embeddings", "TextEncoder", "TextTokenizer", "TokenizedText", "pad_batch"]


@dataclass(frozen=True)
class TokenizedText:
    input_ids: list[int]
    truncated: bool

    @property
    def tokens(self) -> int:
        return len(self.input_ids)


class TextTokenizer:
    """A ``tokenizers`` tokenizer with truncation at ``max_tokens`` and no padding."""

    def __init__(self, tokenizer: Any, *, max_tokens: int) -> None:
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, max_tokens: int) -> TextTokenizer:
        from tokenizers import Tokenizer  # imported at init only

        # Read by Python (not the Rust library), so the bundler sees the file opened (see load_session);
        # as bytes: decoding half a megabyte into a str first cost the init about 2 ms more.
        return cls(Tokenizer.from_buffer(resolve_model_path(path).read_bytes()), max_tokens=max_tokens)

    @classmethod
    def from_info(cls, info: ModelInfo) -> TextTokenizer:
        """The tokenizer a manifest model names (``tokenizer.file``), truncating at its ``max_tokens``."""
        return cls.load(info.path.with_name(info.metadata["tokenizer"]["file"]), max_tokens=int(info.metadata["max_tokens"]))

    def encode(self, texts: Sequence[str]) -> list[TokenizedText]:
        return [
            TokenizedText(list(encoding.ids), truncated=bool(encoding.overflowing))
            for encoding in self.tokenizer.encode_batch(list(texts))
        ]


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Pad to the longest sequence of THIS batch; return ``(input_ids, attention_mask)`` as int64.

    >>> ids, mask = pad_batch([[101, 7, 102], [101, 102]])
    >>> ids.tolist(), mask.tolist()
    ([[101, 7, 102], [101, 102, 0]], [[1, 1, 1], [1, 1, 0]])
    """
    import numpy as np  # here, not at the top: the tokenizer step never pads, and numpy is 100 ms of its cold init

    if not sequences or any(not sequence for sequence in sequences):
        raise ValueError("every sequence needs at least one token")
    width = max(len(sequence) for sequence in sequences)
    input_ids = np.full((len(sequences), width), pad_id, dtype=np.int64)
    attention_mask = np.zeros((len(sequences), width), dtype=np.int64)
    for row, sequence in enumerate(sequences):
        input_ids[row, : len(sequence)] = sequence
        attention_mask[row, : len(sequence)] = 1
    return input_ids, attention_mask


@dataclass(frozen=True)
class Embeddings:
    vectors: np.ndarray  # [n, dimensions], unit length
    inference_ms: float


class TextEncoder:
    """The sentence encoder: ``input_ids`` + ``attention_mask`` in, ``embedding`` [n, 384] out."""

    def __init__(self, session: Any, *, name: str, version: str) -> None:
        self.session = session
        self.name = name
        self.version = version

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, name: str, version: str, threads: int | None = None) -> TextEncoder:
        from .inference import load_session

        return cls(load_session(path, threads=threads), name=name, version=version)

    @classmethod
    def from_info(cls, info: ModelInfo) -> TextEncoder:
        """Open an encoder of the manifest."""
        return cls.load(info.path, name=info.name, version=info.version)

    def embed(self, sequences: Sequence[Sequence[int]]) -> Embeddings:
        """ONE ``session.run`` over the batch, padded to its longest sequence."""
        input_ids, attention_mask = pad_batch(sequences)
        started = time.perf_counter()
        (vectors,) = self.session.run(["embedding"], {"input_ids": input_ids, "attention_mask": attention_mask})
        return Embeddings(vectors, (time.perf_counter() - started) * 1000.0)
