"""What ``inferbus demo`` and ``inferbus chaos`` send a component: demo fixtures, kept apart from what is deployed.

A module in ``pipeline/`` lists them in ``DEMO`` beside its ``COMPONENTS``; each names its component.
Nothing here reaches the stack: the CDK app reads the declarations only.

Example
-------
>>> inputs = DemoInputs("iris-classifier", samples=lambda n: [Sample({"features": [5.1, 3.5, 1.4, 0.2]}, "setosa")] * n,
...                     count=2, limit=10, truth_field="label")
>>> [s.truth for s in inputs.samples(inputs.count)]
['setosa', 'setosa']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .declarations import DeclarationError, Pipeline, Workflow

__all__ = ["Corruption", "DemoFixtures", "DemoInputs", "DemoReviewer", "Reviewer", "Sample"]

Reviewer = Callable[[Any, Any], tuple[bool, str | None]]
"""``reviewer(case, truth) -> (approve, note)``: plays the person of a workflow's manual review."""


@dataclass(frozen=True)
class Sample:
    """One held-out input for the demo: the event's ``data`` and, if known, the true answer."""

    data: dict[str, Any]
    truth: Any = None


@dataclass(frozen=True)
class Corruption:
    """A malformed input for the demo: ``change`` breaks a valid CloudEvent (a dict) in place."""

    why: str
    change: Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class DemoInputs:
    """What the demo sends to the component named ``component``.

    Parameters
    ----------
    component
        The declared component's name.
    samples
        ``samples(count) -> [Sample]``: the first ``count`` held-out inputs (data that ships
        with the repository, never a download).
    count
        How many the demo sends by default (``inferbus demo --<name> N`` changes it).
    limit
        How many there are.
    malformed
        Broken copies of the first sample, each kept aside with its reason.
    duplicates
        How many of the samples the demo delivers a second time.
    truth_field
        Dotted path in the result's ``data`` to compare with :attr:`Sample.truth` (accuracy).
    """

    component: str
    samples: Callable[[int], Sequence[Sample]]
    count: int
    limit: int
    malformed: tuple[Corruption, ...] = ()
    duplicates: int = 0
    truth_field: str | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.count <= self.limit:
            raise DeclarationError(self.component, f"DemoInputs.count must be in [0, limit={self.limit}], got {self.count}")
        if not 0 <= self.duplicates <= self.count:
            raise DeclarationError(self.component,
                                   f"DemoInputs.duplicates must be in [0, count={self.count}], got {self.duplicates}")


@dataclass(frozen=True)
class DemoReviewer:
    """Who plays the person of the workflow named ``component``'s manual review in the demo and chaos."""

    component: str
    decide: Reviewer


@dataclass(frozen=True)
class DemoFixtures:
    """Every ``DEMO`` entry of ``pipeline/``, by component name, checked against the declarations."""

    inputs: Mapping[str, DemoInputs] = field(default_factory=dict)
    reviewers: Mapping[str, Reviewer] = field(default_factory=dict)

    @classmethod
    def collect(cls, entries: Iterable[DemoInputs | DemoReviewer], pipeline: Pipeline) -> DemoFixtures:
        """Index ``entries`` by component.

        Raises
        ------
        DeclarationError
            An entry that names no declared component (or no producer), a component named twice, or a
            reviewer for a workflow without a review queue.
        """
        inputs: dict[str, DemoInputs] = {}
        reviewers: dict[str, Reviewer] = {}
        producers = {component.name: component for component in pipeline.producers}
        for entry in entries:
            if entry.component not in producers:
                raise DeclarationError(entry.component, f"DEMO names no declared consumer or workflow "
                                       f"(declared: {', '.join(sorted(producers))})")
            if isinstance(entry, DemoInputs):
                if entry.component in inputs:
                    raise DeclarationError(entry.component, "DEMO holds two DemoInputs for it")
                inputs[entry.component] = entry
            elif isinstance(entry, DemoReviewer):
                component = producers[entry.component]
                if not (isinstance(component, Workflow) and component.review_queue):
                    raise DeclarationError(entry.component, "a DemoReviewer needs a workflow with a review_queue")
                reviewers[entry.component] = entry.decide
            else:
                raise DeclarationError(entry.component, f"DEMO holds {entry!r}, not DemoInputs or DemoReviewer")
        return cls(inputs, reviewers)
