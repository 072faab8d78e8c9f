"""Words of a text with their character offsets, as UD English-EWT tokenizes them (no numpy: a tokenizing
step imports this alone, see tests/unit/test_cold_init.py).

Example
-------
>>> [w.text for w in split_words("Dr. Smith's flat isn't in London.")]
['Dr.', 'Smith', "'s", 'flat', 'is', "n't", 'in', 'London', '.']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Word", "normalise", "read_words", "sentence_bounds", "split_words"]

# Words as UD English-EWT tokenizes them: clitics ('s, n't, 're, ...), hyphens and punctuation apart,
# URLs, e-mail addresses, numbers with separators and abbreviations with dots kept whole.
_WORD = re.compile(
    r"""https?://\S+|www\.\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"""   # URLs and e-mail addresses
    r"""|\d+(?:[.,:/-]\d+)+"""                                   # 3.5, 1,000, 10:30, 12/05
    r"""|(?:[A-Za-z]\.){2,}|(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Inc|Ltd|Co|Corp|vs|etc|e\.g|i\.e)\.(?=\s|$)"""
    r"""|\w+(?=n['’]t\b)|n['’]t\b|\w+(?=['’](?:s|re|ve|ll|d|m)\b)|['’](?:s|re|ve|ll|d|m)\b"""  # do|n't, it|'s
    r"""|\w+(?:['’]\w+)*"""   # words, O'Brien; a hyphen stands apart (well - known), as mostly in the treebank
    r"""|\.{2,}|[-–—]{2,}|\S""",                                 # ..., --, any other character
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Word:
    """A word of a text: ``text == original[start:end]``."""

    text: str
    start: int
    end: int


def split_words(text: str) -> list[Word]:
    """The words of ``text`` with their character offsets (see the module's example)."""
    return [Word(match.group(), match.start(), match.end()) for match in _WORD.finditer(text)]


def read_words(text: str, raw: Any) -> list[Word]:
    """Words as a step receives them (``[{"text", "start", "end"}, ...]``), checked against ``text``.

    Raises
    ------
    ValueError
        When ``raw`` is not such a list or a word is not ``text[start:end]``.
    """
    if not isinstance(raw, list):
        raise ValueError("words must be a list of {text, start, end}")  # noqa: TRY004 - bad input, as every step says it
    words = []
    for i, item in enumerate(raw):
        if not (isinstance(item, dict) and isinstance(item.get("text"), str) and isinstance(item.get("start"), int)
                and isinstance(item.get("end"), int) and item["text"] and text[item["start"]:item["end"]] == item["text"]):
            raise ValueError(f"words[{i}] is not a word of the text with its offsets: {item!r}"[:300])
        words.append(Word(item["text"], item["start"], item["end"]))
    return words


def sentence_bounds(words: Sequence[str]) -> list[tuple[int, int]]:
    """``(first, end)`` word ranges of the sentences: one ends after a word made of ``.``, ``!``, ``?``
    (the taggers were trained sentence by sentence)."""
    bounds, first = [], 0
    for i, word in enumerate(words):
        if set(word) <= set(".!?") and (i + 1 == len(words) or not set(words[i + 1]) <= set(".!?")):
            bounds.append((first, i + 1))
            first = i + 1
    if first < len(words):
        bounds.append((first, len(words)))
    return bounds


def normalise(word: str) -> str:
    """The vocabulary's form of a word: lower case, every digit 0."""
    return re.sub(r"\d", "0", word.lower())
