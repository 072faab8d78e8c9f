"""The demo's ledger counts each event once: a DLQ message of an event its component answered or rejected
(a duplicate delivery that found the event claimed by another invocation on every attempt) is a copy,
not a second outcome; a DLQ message of an event with no other outcome is the event kept there."""

from __future__ import annotations

import json
from types import SimpleNamespace

from inferbus.demo.accounting import _rejections_and_dead_letters
from inferbus.demo.inputs import Sent
from inferbus.demo.report import DemoReport, KindReport


def _dead_letter(event_id: str) -> dict[str, str]:
    return {"Body": json.dumps({"detail": {"id": event_id}})}


def _pipeline(dead_lettered: list[str], invalid: list[dict]) -> SimpleNamespace:
    return SimpleNamespace(invalid_events=lambda: invalid, declarations=SimpleNamespace(
                               consumers=[], producers=[SimpleNamespace(name="scorer", result_source="inferbus.scorer")]),
                           dead_letters=lambda: {"ScorerQueuesDeadLetterQueue": [_dead_letter(i) for i in dead_lettered]})


def test_a_dead_lettered_copy_of_an_answered_or_rejected_event_is_not_counted_again():
    sent = Sent(component_of={"answered": "scorer", "rejected": "scorer", "kept": "scorer"},
                reasons={"rejected": "blank text"})
    report = DemoReport()
    report.kinds["scorer"] = kind = KindReport("scorer", "ScoreSubmitted", sent=2, malformed=1, results=1)
    invalid = [{"consumer": "inferbus.scorer", "event_id": "rejected", "error": "InvalidEventError", "reason": "blank text"}]
    _rejections_and_dead_letters(_pipeline(["answered", "answered", "rejected", "kept"], invalid), sent, report,
                                 answered={"scorer": {"answered"}})
    assert (kind.results, kind.rejected, kind.in_dead_letter_queues, kind.dead_lettered_copies) == (1, 1, 1, 2)
    assert kind.balanced


def test_without_the_answer_the_same_dead_letter_is_the_event_kept():
    sent = Sent(component_of={"answered": "scorer"})
    report = DemoReport()
    report.kinds["scorer"] = kind = KindReport("scorer", "ScoreSubmitted", sent=1)
    _rejections_and_dead_letters(_pipeline(["answered"], []), sent, report, answered={})
    assert (kind.in_dead_letter_queues, kind.dead_lettered_copies, kind.balanced) == (1, 0, True)
