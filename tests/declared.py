"""The declared pipeline, as the tests read it: components by name, their result sources."""

from __future__ import annotations

from pipeline import load_pipeline

PIPELINE = load_pipeline()
RESULT_SOURCES = {component.name: component.result_source for component in PIPELINE.producers}
