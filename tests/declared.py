"""The declared pipeline, as the tests read it: components by name, their result sources, what each takes.

Tests derive what they expect from these, never from a count written by hand: a user who adds
components (several on one event type among them) breaks no test of the kit.
"""

from __future__ import annotations

import json
from typing import Any

from event_patterns import compile_pattern

from inferbus.channel_feeds import fed_by_broker
from inferbus.model.demo import DemoInputs
from inferbus.model.settings import InferbusSettings
from pipeline import load_demo_fixtures, load_pipeline

PIPELINE = load_pipeline()
DEMO: dict[str, DemoInputs] = dict(load_demo_fixtures(PIPELINE).inputs)  # what the demo sends, by component
RESULT_SOURCES = {component.name: component.result_source for component in PIPELINE.producers}
# The components a rule of the bus feeds (a kafka or rabbitmq consumer reads its broker instead), and the consumers
# an SQS queue of their own feeds (a fifo one's through its arrivals queue and pipe, in order).
ON_THE_BUS = tuple(c for c in PIPELINE.components if not fed_by_broker(c))
ON_QUEUES = tuple(c for c in PIPELINE.consumers if not fed_by_broker(c))
# What each component a rule feeds takes, from its declaration alone (tests check the template's rules against it).
DECLARED_PATTERNS = {c.name: compile_pattern(PIPELINE.pattern(c.accepts, InferbusSettings())) for c in ON_THE_BUS}


def declared_takers(event: dict[str, Any]) -> set[str]:
    """The components whose declarations take ``event``: as EventBridge delivers it (``source``, ``detail-type``,
    ``detail``) or as a PutEvents entry (``Source``, ``DetailType``, ``Detail``)."""
    if "Detail" in event:
        event = {"source": event["Source"], "detail-type": event["DetailType"], "detail": json.loads(event["Detail"])}
    return {name for name, pattern in DECLARED_PATTERNS.items() if pattern.matches(event)}
