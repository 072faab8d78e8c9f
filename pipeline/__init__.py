"""Your pipeline: one module per component (or per group of components), each with a ``COMPONENTS`` list.

This folder is the one place you declare what runs: every module here that does not start
with ``_`` is read, and its ``COMPONENTS`` (``Consumer``, ``Workflow`` and ``Route``
declarations from :mod:`inferbus.model`) join the pipeline. The stack, the embedded
runtime, the demo, chaos, the docs and the tests all derive from them. A module's ``DEMO``
list (``DemoInputs``, ``DemoReviewer``) says what ``inferbus demo`` sends; the stack never reads it.

``inferbus new consumer NAME --model FILE.onnx --event TYPE`` writes a module here for you
(see ``docs/extending.md``).

Example
-------
>>> pipeline = load_pipeline()
>>> "image-classifier" in [consumer.name for consumer in pipeline.consumers]
True
>>> "image-classifier" in load_demo_fixtures(pipeline).inputs
True
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from inferbus.model.declarations import Consumer, DeclarationError, Pipeline, Route, Workflow
from inferbus.model.demo import DemoFixtures

__all__ = ["load_demo_fixtures", "load_pipeline"]


def _modules() -> list[ModuleType]:
    """Every declaration module of this package, imported; a bad declaration names its file."""
    modules = []
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        try:
            modules.append(importlib.import_module(f"{__name__}.{module_info.name}"))
        except DeclarationError as error:
            raise DeclarationError(f"pipeline/{module_info.name}.py: {error.declaration}", error.problem) from None
    return modules


def load_pipeline() -> Pipeline:
    """Every component declared in this package, checked as a whole.

    Raises
    ------
    inferbus.model.DeclarationError
        A declaration that cannot work (naming its file and component), two components with one
        name, a ``Producer`` that names no component, a ``COMPONENTS`` entry that is not a declaration.
    """
    consumers: list[Consumer] = []
    workflows: list[Workflow] = []
    routes: list[Route] = []
    for module in _modules():
        for component in getattr(module, "COMPONENTS", ()):
            if isinstance(component, Consumer):
                consumers.append(component)
            elif isinstance(component, Workflow):
                workflows.append(component)
            elif isinstance(component, Route):
                routes.append(component)
            else:
                raise DeclarationError(f"pipeline/{module.__name__.rpartition('.')[2]}.py",
                                       f"COMPONENTS holds {component!r}, not a Consumer, Workflow or Route")
    return Pipeline(tuple(consumers), tuple(workflows), tuple(routes))


def load_demo_fixtures(pipeline: Pipeline | None = None) -> DemoFixtures:
    """Every module's ``DEMO`` entries, by component, checked against ``pipeline`` (default: :func:`load_pipeline`)."""
    return DemoFixtures.collect([entry for module in _modules() for entry in getattr(module, "DEMO", ())],
                                pipeline or load_pipeline())
