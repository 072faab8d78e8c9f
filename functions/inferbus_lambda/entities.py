"""Entity extraction by rules: regular expressions for structured entities, capitalisation for names.

A documented rule set, tested on examples, in the tradition of pattern-based extractors. The
text pipeline's ``Recognise`` step takes people, organisations and places from its trained
recogniser (``text-ner``) and from these rules only what such a model does not tag (every
type but NAME), where it does not overlap an entity of the model.

=========  ===================================================================
type       rule
=========  ===================================================================
EMAIL      ``local@domain.tld``
URL        ``http(s)://...`` or ``www....``, trailing punctuation left out
MONEY      a currency symbol before a number (``$12.50``, ``€5m``), or a number
           before a currency code or word (``40 EUR``, ``3 dollars``)
PERCENT    a number before ``%``, ``percent`` or ``per cent``
DATE       ISO dates, ``12/31/2026``, ``2 December 2026``, ``Dec 2, 2026``,
           weekday names
TIME       ``14:30``, ``9:05:10``, ``7 pm``, ``10:15am``
NAME       a run of capitalised words (people, places, organisations, products),
           with a title (``Dr.``, ``Ms.``) or initials, joined by ``of``/``de``/``van``/
           ``von``/``da``/``del``/``&``; a single
           capitalised word that starts a sentence is skipped, as is a common
           sentence-opening word
=========  ===================================================================

Spans never overlap: earlier rows of the table win. Offsets are Python string indexes,
``text[start:end] == entity.text``.

Example
-------
>>> [(e["type"], e["text"]) for e in extract_entities("Ada Lovelace paid $12.50 on 2 December 2026 at 14:30.")]
[('NAME', 'Ada Lovelace'), ('MONEY', '$12.50'), ('DATE', '2 December 2026'), ('TIME', '14:30')]
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["extract_entities"]

MONTHS = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
          r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
WEEKDAYS = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
ORDINAL = r"\d{1,2}(?:st|nd|rd|th)?"

RULES: list[tuple[str, re.Pattern[str]]] = [
    ("EMAIL", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")),
    ("URL", re.compile(r"\b(?:https?://|www\.)[^\s<>\"']+[^\s<>\"'.,;:!?)\]]")),
    ("MONEY", re.compile(
        rf"[$€£¥]\s?(?:{NUMBER})(?:\s?(?:k|m|bn|million|billion)\b)?"
        rf"|\b(?:{NUMBER})\s?(?:USD|EUR|GBP|JPY|CHF|dollars?|euros?|pounds?)\b")),
    ("PERCENT", re.compile(rf"\b(?:{NUMBER})\s?(?:%|percent\b|per cent\b)")),
    ("DATE", re.compile(
        rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b"
        rf"|\b{ORDINAL}\s+{MONTHS}(?:,?\s+\d{{4}})?\b"
        rf"|\b{MONTHS}\s+{ORDINAL}(?:,?\s+\d{{4}})?\b"
        rf"|\b{WEEKDAYS}\b")),
    ("TIME", re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?\b)?|\b\d{1,2}\s?[ap]\.?m\.?(?=\W|$)", re.IGNORECASE)),
]

CAPITALISED = r"(?:(?:Dr|Mr|Mrs|Ms|Prof|St)\.|[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)*|[A-Z]{2,}|[A-Z]\.)"
NAME = re.compile(rf"\b{CAPITALISED}(?:\s+(?:(?:of|de|van|von|da|del|&)\s+)?{CAPITALISED})*")
# Capitalised only because they open a sentence (or are the pronoun I): not names on their own.
SENTENCE_OPENERS = frozenset("""
    A An And As At But By For From He Her His How I If In It Its My No Not Of On Or Our She So That The Their Then There
    These They This Those To We What When Where Which While Who Why With Yes You Your Hello Hi Dear Thanks Thank Please
    After Before Also Just Very Great Good Bad Best Worst Never Always Today Yesterday Tomorrow Our Overall
""".split())


def _starts_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    return not before or before[-1] in ".!?\n\"'(:"


def _names(text: str) -> list[tuple[int, int]]:
    spans = []
    for match in NAME.finditer(text):
        words = match.group().split()
        start = match.start()
        if words[0] in SENTENCE_OPENERS or (len(words) == 1 and _starts_sentence(text, start)):
            # Drop the opener and keep the rest of the run, if any.
            rest = re.match(r"\S+\s+", match.group())
            if len(words) == 1 or rest is None:
                continue
            start += rest.end()
            if text[start:match.end()].split()[0] in SENTENCE_OPENERS:
                continue
        spans.append((start, match.end()))
    return spans


def extract_entities(text: str, limit: int = 100) -> list[dict[str, Any]]:
    """Entities of ``text`` in order of position, at most ``limit``; see the module docstring."""
    taken: list[tuple[int, int]] = []
    found: list[dict[str, Any]] = []

    def add(entity_type: str, start: int, end: int) -> None:
        if any(start < taken_end and taken_start < end for taken_start, taken_end in taken):
            return
        taken.append((start, end))
        found.append({"text": text[start:end], "type": entity_type, "start": start, "end": end})

    for entity_type, pattern in RULES:
        for match in pattern.finditer(text):
            add(entity_type, match.start(), match.end())
    for start, end in _names(text):
        add("NAME", start, end)
    found.sort(key=lambda entity: entity["start"])
    return found[:limit]
