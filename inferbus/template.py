"""Synthesize the CDK app (no bundling, no built-in validation) and read its template.

The app is a root stack (the shared core) with a nested stack per component; what is returned is
the flattened view (:mod:`inferbus.runtime.nested_stacks`): every resource and output of every
stack in one template, which the runtime provisions and the tools read as they read one stack.
Every template the synth wrote is first checked against CloudFormation's limits
(:mod:`infra.limits`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CDK_QUIET_ENV = {  # jsii's Node banners: infra.quiet_node_banners, run when infra is imported
    "CDK_DISABLE_CLI_TELEMETRY": "true",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@dataclass(frozen=True)
class SynthesizedStacks:
    """The root template, each nested stack's (by its logical id in the root), and where they were written."""

    root: dict[str, Any]
    nested: dict[str, dict[str, Any]]
    directory: str

    def flattened(self) -> dict[str, Any]:
        from .runtime.nested_stacks import flatten

        return flatten(self.root, self.nested)


def synthesize_stacks(settings: Any = None, *, overrides: Mapping[str, Any] | None = None, pipeline: Any = None,
                      context: Mapping[str, Any] | None = None, outdir: str | None = None) -> SynthesizedStacks:
    """Synthesize the app and return its templates, each checked against CloudFormation's limits.

    Parameters are those of :func:`synthesize`.

    Raises
    ------
    infra.limits.CloudFormationLimitError
        A template past one of CloudFormation's limits, naming the stack, the limit and what to do.
    """
    import json
    from pathlib import Path

    for key, value in CDK_QUIET_ENV.items():
        os.environ.setdefault(key, value)
    import infra  # noqa: F401 - first: it quiets jsii's Node banners before aws_cdk starts Node
    from aws_cdk import NestedStack  # imported late: jsii starts a node process

    from infra.app import build_app
    from infra.limits import check_assembly, limit_error_of

    app, stack = build_app(
        settings,
        pipeline,
        overrides=overrides,
        outdir=outdir or tempfile.mkdtemp(prefix="inferbus-cdk-"),
        context={"aws:cdk:bundling-stacks": [], **(context or {})},
        builtin_cloud_formation_validation=False,
    )
    try:
        assembly = app.synth()
    except Exception as error:  # jsii's RuntimeError: CDK counts a stack's resources as it synthesizes
        limit = limit_error_of(error)
        if limit is None:
            raise
        raise limit from None
    check_assembly(assembly.directory)
    nested = {
        stack.resolve(child.nested_stack_resource.logical_id): json.loads(
            (Path(assembly.directory) / child.template_file).read_text())
        for child in stack.node.find_all() if isinstance(child, NestedStack) and child.nested_stack_parent is stack
    }
    return SynthesizedStacks(assembly.get_stack_by_name(stack.stack_name).template, nested, assembly.directory)


def synthesize(settings: Any = None, *, overrides: Mapping[str, Any] | None = None, pipeline: Any = None,
               context: Mapping[str, Any] | None = None, outdir: str | None = None) -> dict[str, Any]:
    """Return the CloudFormation template of the inferbus stack as a dict: the root stack and its
    nested stacks flattened into one (see :class:`SynthesizedStacks`).

    Parameters
    ----------
    settings
        An ``inferbus.model.settings.InferbusSettings``; default, from ``context``, else the defaults.
    overrides
        Component settings to change, ``{"image-classifier.batch_size": 10}``.
    pipeline
        The declarations; default, ``pipeline/``.
    context
        CDK context, as ``-c`` gives it (``{"stage": "dev"}``).
    outdir
        Where the cloud assembly goes; default, a temporary folder.
    """
    return synthesize_stacks(settings, overrides=overrides, pipeline=pipeline, context=context,
                             outdir=outdir).flattened()
