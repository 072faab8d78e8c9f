"""Your pipeline: one module per component (or per group of components), each with a ``COMPONENTS`` list.

This folder is the one place you declare what runs: every module here that does not start
with ``_`` is read, and its ``COMPONENTS`` (``Consumer``, ``Workflow`` and ``Route``
declarations from :mod:`infra.declarations`) join the pipeline. The stack, the embedded
runtime, the demo, chaos, the docs and the tests all derive from them.

``inferbus new consumer NAME --model FILE.onnx --event TYPE`` writes a module here for you
(see ``docs/extending.md``).

Example
-------
>>> pipeline = load_pipeline()
>>> "image-classifier" in [consumer.name for consumer in pipeline.consumers]
True
"""

from __future__ import annotations

import importlib
import pkgutil

from infra.declarations import Consumer, Pipeline, Route, Workflow

__all__ = ["load_pipeline"]


def load_pipeline() -> Pipeline:
    """Every component declared in this package, checked as a whole.

    Raises
    ------
    infra.settings.SettingsError
        Two components with one name, a ``Producer`` that names no component, ...
    TypeError
        A module whose ``COMPONENTS`` holds something that is not a declaration.
    """
    consumers: list[Consumer] = []
    workflows: list[Workflow] = []
    routes: list[Route] = []
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for component in getattr(module, "COMPONENTS", ()):
            if isinstance(component, Consumer):
                consumers.append(component)
            elif isinstance(component, Workflow):
                workflows.append(component)
            elif isinstance(component, Route):
                routes.append(component)
            else:
                raise TypeError(f"pipeline/{module_info.name}.py: COMPONENTS holds {component!r}, "
                                "not a Consumer, Workflow or Route")
    return Pipeline(tuple(consumers), tuple(workflows), tuple(routes))
