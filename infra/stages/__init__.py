"""Stages with declarations of their own: ``-c stage=<name>`` reads ``infra/stages/<name>.py`` if there is one.

A stage module is read only for its stage; the other stages deploy ``pipeline/`` with the settings'
defaults. It holds:

- ``SETTINGS``: setting defaults for the stage (``{"claims_store": "redis"}``); ``-c key=value`` still
  overrides each;
- ``COMPONENTS``: the stage's components (``Consumer``, ``Workflow``, ``Route``), instead of ``pipeline/``'s.

Example
-------
>>> sorted(STAGES)
['channels']
>>> STAGES["channels"].SETTINGS["claims_store"]
'redis'
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from inferbus.model.declarations import Consumer, Pipeline, Route, Workflow

__all__ = ["STAGES", "stage_pipeline"]

STAGES: dict[str, ModuleType] = {
    info.name: importlib.import_module(f"{__name__}.{info.name}")
    for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")
}


def stage_pipeline(module: ModuleType) -> Pipeline:
    """The stage's ``COMPONENTS`` as a pipeline."""
    components = tuple(getattr(module, "COMPONENTS", ()))
    return Pipeline(consumers=tuple(c for c in components if isinstance(c, Consumer)),
                    workflows=tuple(c for c in components if isinstance(c, Workflow)),
                    routes=tuple(c for c in components if isinstance(c, Route)))
