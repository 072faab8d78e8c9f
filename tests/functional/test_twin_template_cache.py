"""A start of the twin keeps the app's template and the next start takes it back, equal to a synth of the app."""

from __future__ import annotations

from pathlib import Path

from inferbus.local import LocalPipeline
from inferbus.template_cache import TemplateCache


def test_a_start_keeps_the_apps_template_and_the_next_takes_it_back(template: dict, tmp_path: Path) -> None:
    cache = TemplateCache(tmp_path)
    first = LocalPipeline(template_cache=cache)  # synthesizes: nothing kept yet
    second = LocalPipeline(template_cache=cache)
    assert (first.template_kept, second.template_kept) == (False, True)
    assert first.template == template  # the session's synth of the app (tests/conftest.py)
    assert second.template == template
    assert len(list(tmp_path.glob("*.json"))) == 1
