"""Settings and declarations from CDK context: ``-c stage=dev``, ``-c review_threshold=0.6``,
``-c image-classifier.batch_size=50``, ``-c text-pipeline.Embed.memory_mb=4096``.

Context comes from ``-c key=value`` on the command line (strings) or the ``context`` of
``cdk.json`` (JSON values). Each key is one of:

=================================  ===============================================================
key                                sets
=================================  ===============================================================
``stage``                          the stage (names get ``-<stage>``; default none); a stage with a
                                   module in ``infra/stages/`` (``channels``) brings its own
                                   components and setting defaults
a field of ``InferbusSettings``    that setting (``review_threshold``, ``archive_retention_days``, ...)
``<component>.<field>``            a consumer's or a route's setting (``ConsumerSettings``, ...)
``<workflow>.<Task>.<field>``      a workflow task's setting (``FunctionSettings``)
=================================  ===============================================================

CDK's own keys (``@aws-cdk/...``, ``aws:cdk:...``) are left alone. Any other key, or a value
that does not fit its setting, fails the synth with a message that names it.

Example
-------
>>> from pipeline import load_pipeline
>>> context = {"stage": "dev", "review_threshold": "0.6", "image-classifier.batch_size": "50"}
>>> settings, overrides = parse_context(context, load_pipeline())
>>> settings.stage, settings.review_threshold, overrides
('dev', 0.6, {'image-classifier.batch_size': 50})
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from inferbus.model.declarations import Pipeline
from inferbus.model.settings import InferbusSettings, SettingsError

__all__ = ["configure", "parse_context"]


def _is_cdk_key(key: str) -> bool:
    return key.startswith(("@", "aws:", "aws-cdk:", "cdk")) or ":" in key or "/" in key


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    """A context value (a string from ``-c``, or JSON from cdk.json) as the setting's type."""
    origin = typing.get_origin(annotation)
    if origin is Literal:
        choices = typing.get_args(annotation)
        if value not in choices:
            raise SettingsError(f"-c {key}: must be one of {', '.join(map(str, choices))}, got {value!r}")
        return value
    if origin in (typing.Union, types.UnionType):
        kinds = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return _coerce(value, kinds[0], key)
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        raise SettingsError(f"-c {key}: set its fields one by one ({key}.<field>)")
    if not isinstance(value, str):
        text = json.dumps(value)
    else:
        text = value
    try:
        if annotation is bool:
            if isinstance(value, bool):
                return value
            lowered = text.strip().lower()
            if lowered not in ("true", "false"):
                raise ValueError(text)
            return lowered == "true"
        if annotation is int:
            return int(text)
        if annotation is float:
            return float(text)
        if annotation is str:
            return value if isinstance(value, str) else text
    except ValueError:
        raise SettingsError(f"-c {key}: expected {annotation.__name__}, got {value!r}") from None
    raise SettingsError(f"-c {key}: a {annotation} setting cannot be set from context")


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _coerce_component_value(pipeline: Pipeline | None, key: str, value: Any) -> Any:
    if pipeline is None:
        return value
    settings, field_name = pipeline.setting_of(key)
    return _coerce(value, _hints(type(settings))[field_name], key)


def parse_context(context: Mapping[str, Any], pipeline: Pipeline | None = None) -> tuple[InferbusSettings, dict[str, Any]]:
    """The settings and the component overrides that ``context`` asks for.

    Raises
    ------
    SettingsError
        For an unknown key or a value its setting does not take, naming both.
    """
    hints = _hints(InferbusSettings)
    values: dict[str, Any] = {}
    overrides: dict[str, Any] = {}
    for key, value in context.items():
        if _is_cdk_key(key):
            continue
        if "." in key:
            overrides[key] = _coerce_component_value(pipeline, key, value)
        elif key in hints:
            values[key] = _coerce(value, hints[key], key)
        else:
            known = sorted(hints)
            raise SettingsError(f"-c {key}: not a setting; settings are {', '.join(known)}, or "
                                "<component>.<setting> for one component's")
    return InferbusSettings(**values), overrides


def configure(context: Mapping[str, Any], pipeline: Pipeline) -> tuple[InferbusSettings, Pipeline]:
    """Settings and declarations as ``context`` sets them (see the module docstring). A stage with a module
    of its own (``infra/stages/<stage>.py``) brings its components instead of ``pipeline`` and its setting
    defaults under ``context``'s."""
    from .stages import STAGES, stage_pipeline

    stage = STAGES.get(str(context.get("stage", "")))
    if stage is not None:
        context = {**getattr(stage, "SETTINGS", {}), **context}
        pipeline = stage_pipeline(stage)
    settings, overrides = parse_context(context, pipeline)
    return settings, pipeline.with_overrides(overrides)


