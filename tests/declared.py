"""The declared pipeline, as the tests read it: components by name, their result sources."""

from __future__ import annotations

from inferbus.model.demo import DemoInputs
from pipeline import load_demo_fixtures, load_pipeline

PIPELINE = load_pipeline()
DEMO: dict[str, DemoInputs] = dict(load_demo_fixtures(PIPELINE).inputs)  # what the demo sends, by component
RESULT_SOURCES = {component.name: component.result_source for component in PIPELINE.producers}
