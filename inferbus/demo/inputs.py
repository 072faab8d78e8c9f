"""What the demo sends: each declared component's held-out samples, broken copies, duplicate deliveries.

Every sample is validated by its contract before it is sent (a sample that breaks it is a
bug in the declaration, reported as such); the broken copies are built by the declaration's
:class:`~inferbus.model.demo.Corruption` list from a valid event. The samples are each module's ``DEMO``
entries in ``pipeline/`` (:func:`inputs_of`), kept apart from the declarations the stack reads.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from inferbus_lambda.contracts import data_model, new_event, to_put_events_entry
from pydantic import ValidationError

from inferbus.model.declarations import Consumer, Pipeline, Workflow
from inferbus.model.demo import Corruption, DemoFixtures, DemoInputs, Reviewer

if TYPE_CHECKING:
    from inferbus.model.settings import InferbusSettings

__all__ = ["DEMO_SOURCE", "DemoInputError", "Sent", "build_inputs", "check_sizes", "declared", "demo_components",
           "input_type", "inputs_of", "reviewer_of", "sample_event", "sample_events"]

DEMO_SOURCE = "inferbus.demo"


class DemoInputError(ValueError):
    """A demo size out of range, or a declared sample that breaks its own contract."""


@dataclass
class Sent:
    """What the demo sent, to check the results against."""

    component_of: dict[str, str] = field(default_factory=dict)  # event id -> the component it was sent to
    truth: dict[str, Any] = field(default_factory=dict)  # event id -> true answer
    sent_at: dict[str, datetime] = field(default_factory=dict)  # when each was built; the demo sets its first PutEvents
    reasons: dict[str, str] = field(default_factory=dict)  # malformed event id -> why
    entries: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # component -> (valid, malformed, duplicates)


@functools.cache
def _pipeline_fixtures() -> DemoFixtures:
    from pipeline import load_demo_fixtures

    return load_demo_fixtures()


_STAGE_FIXTURES: list[DemoFixtures] = []  # while a stage's declarations run (declared), its DEMO


def _fixtures() -> DemoFixtures:
    return _STAGE_FIXTURES[-1] if _STAGE_FIXTURES else _pipeline_fixtures()


@contextlib.contextmanager
def declared(context: Mapping[str, Any] | None = None,
             pipeline: Pipeline | None = None) -> Iterator[tuple[InferbusSettings, Pipeline]]:
    """The settings and declarations CDK context asks for (``-c stage=channels``, ``-c <component>.<setting>=...``),
    as ``cdk synth`` reads them, from ``pipeline`` (default ``pipeline/``'s declarations); within, the demo samples
    are the stage's (its module's ``DEMO``) when the stage brings its own components, else ``pipeline/``'s.

    Raises
    ------
    inferbus.model.settings.SettingsError
        An unknown key or a value its setting does not take.
    """
    from pipeline import load_pipeline

    from infra.configuration import configure
    from infra.stages import STAGES

    settings, pipeline = configure(dict(context or {}), pipeline or load_pipeline())
    stage = STAGES.get(str((context or {}).get("stage", "")))
    if stage is None or not hasattr(stage, "COMPONENTS"):
        yield settings, pipeline
        return
    _STAGE_FIXTURES.append(DemoFixtures.collect(getattr(stage, "DEMO", ()), pipeline))
    try:
        yield settings, pipeline
    finally:
        _STAGE_FIXTURES.pop()


def inputs_of(component: Consumer | Workflow) -> DemoInputs | None:
    """What the demo sends ``component`` (its ``DemoInputs`` in ``pipeline/``), if anything."""
    return _fixtures().inputs.get(component.name)


def reviewer_of(component: Consumer | Workflow) -> Reviewer | None:
    """Who plays the person of ``component``'s manual review in the demo and chaos, if anyone."""
    return _fixtures().reviewers.get(component.name)


def demo_components(pipeline: Pipeline) -> list[Consumer | Workflow]:
    """The components the demo sends to: those with ``DemoInputs``."""
    return [component for component in pipeline.producers if inputs_of(component) is not None]


def input_type(component: Consumer | Workflow) -> str:
    return component.accepts.type


def sample_events(component: Consumer | Workflow, count: int, *, source: str = DEMO_SOURCE) -> list[tuple[Any, Any]]:
    """The first ``count`` held-out samples of ``component`` as new CloudEvents, each with its true answer."""
    demo = inputs_of(component)
    if demo is None:
        raise DemoInputError(f"{component.name} declares no demo samples")
    if not 0 <= count <= demo.limit:
        raise DemoInputError(f"{component.name} has {demo.limit} samples, not {count}")
    return [(_event(component, sample.data, source, correlationid=None), sample.truth) for sample in demo.samples(count)]


def sample_event(component: Consumer | Workflow, index: int, *, source: str = DEMO_SOURCE) -> tuple[Any, Any]:
    """The ``index``-th held-out sample of ``component`` as a new CloudEvent, and its true answer."""
    demo = inputs_of(component)
    limit = demo.limit if demo else 0
    if not 0 <= index < limit:
        raise DemoInputError(f"{component.name} has samples 0-{limit - 1}, not {index}")
    return sample_events(component, index + 1, source=source)[index]


def _event(component: Consumer | Workflow, data: dict[str, Any], source: str, correlationid: str | None) -> Any:
    event_type = input_type(component)
    model = data_model(event_type)
    if model is None:
        raise DemoInputError(f"{component.name}: no contract defines {event_type}")
    try:
        return new_event(model.model_validate(data), source=source, correlationid=correlationid)
    except ValidationError as error:
        raise DemoInputError(f"{component.name}: a declared demo sample breaks the {event_type} contract: "
                             f"{error.errors(include_url=False)[0]['msg']}") from None


def _count(component: Consumer | Workflow, demo: DemoInputs, counts: Mapping[str, int]) -> int:
    count = counts.get(component.name, demo.count)
    if not 0 <= count <= demo.limit:
        raise DemoInputError(f"--count {component.name}={count}: must be in [0, {demo.limit}]")
    return count


def check_sizes(pipeline: Pipeline, counts: Mapping[str, int] | None, duplicates: Mapping[str, int] | None) -> None:
    """Refuse sizes the declarations cannot meet before anything starts (an unknown component, a count out of range).

    Raises
    ------
    DemoInputError
        Naming the option and what it may be.
    """
    counts, duplicates = counts or {}, duplicates or {}
    components = {c.name: c for c in demo_components(pipeline)}
    unknown = sorted((set(counts) | set(duplicates)) - set(components))
    if unknown:
        raise DemoInputError(f"no demo inputs for {unknown}; components with demo inputs: {list(components)}")
    for name, component in components.items():
        demo = inputs_of(component)
        assert demo is not None
        count = _count(component, demo, counts)
        if not 0 <= duplicates.get(name, 0) <= max(count, 0):
            raise DemoInputError(f"--duplicates {name}={duplicates[name]}: must be in [0, {count}] (its count)")


def build_inputs(pipeline: Pipeline, bus_name: str, *, counts: Mapping[str, int] | None = None,
                 duplicates: Mapping[str, int] | None = None) -> Sent:
    """Every entry the demo puts on the bus: valid samples first, then broken ones, then redeliveries.

    Parameters
    ----------
    counts
        Samples per component (default: each declaration's ``demo.count``).
    duplicates
        Samples delivered a second time, per component (default: each declaration's ``demo.duplicates``).
        Both as :func:`check_sizes` accepted them (the demo checks before it provisions).
    """
    counts, duplicates = counts or {}, duplicates or {}
    sent = Sent()
    valid: dict[str, list[dict[str, Any]]] = {}
    for component in demo_components(pipeline):
        demo = inputs_of(component)
        assert demo is not None
        entries = valid[component.name] = []
        for index, sample in enumerate(demo.samples(_count(component, demo, counts))):
            event = _event(component, sample.data, DEMO_SOURCE, correlationid=f"{component.name}-{index}")
            sent.component_of[event.id], sent.truth[event.id], sent.sent_at[event.id] = component.name, sample.truth, event.time
            entries.append(to_put_events_entry(event, bus_name))
        sent.entries += entries
    redelivered: list[dict[str, Any]] = []
    for component in demo_components(pipeline):
        demo = inputs_of(component)
        assert demo is not None
        entries = valid[component.name]
        broken = _malformed(component, demo, entries[0], bus_name, sent) if entries else 0
        twice = min(duplicates.get(component.name, demo.duplicates), len(entries))
        redelivered += entries[:twice]  # at-least-once redeliveries of events already sent
        sent.counts[component.name] = (len(entries), broken, twice)
    sent.entries += redelivered
    return sent


# Broken copies no rule of the bus takes, sent to every component: the unrouted-events check keeps them.
UNROUTED = (
    Corruption("no specversion (no rule takes it)", lambda d: d.pop("specversion")),
    Corruption("a type with a zero-width space (no rule takes it)", lambda d: d.update(type=d["type"][:3] + "\u200b" + d["type"][3:])),
)


def _malformed(component: Consumer | Workflow, demo: DemoInputs, template: dict[str, Any], bus_name: str,
               sent: Sent) -> int:
    """Copies of a valid entry, each broken by one of the declaration's corruptions (and the ones no rule
    takes), each with why."""
    for index, corruption in enumerate((*demo.malformed, *UNROUTED)):
        detail = json.loads(template["Detail"])
        detail["id"] = f"malformed-{component.name}-{index}"
        corruption.change(detail)
        sent.reasons[detail["id"]], sent.component_of[detail["id"]] = corruption.why, component.name
        sent.entries.append({**template, "Detail": json.dumps(detail), "EventBusName": bus_name,
                             "DetailType": detail.get("type", template["DetailType"])})
    return len(demo.malformed) + len(UNROUTED)
