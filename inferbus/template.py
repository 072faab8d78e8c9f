"""Synthesize the CDK app (no bundling, no built-in validation) and read its template."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from typing import Any

CDK_QUIET_ENV = {
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1",
    "CDK_DISABLE_CLI_TELEMETRY": "true",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def synthesize(settings: Any = None, *, overrides: Mapping[str, Any] | None = None, pipeline: Any = None,
               context: Mapping[str, Any] | None = None, outdir: str | None = None) -> dict[str, Any]:
    """Return the CloudFormation template of the inferbus stack as a dict.

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
    for key, value in CDK_QUIET_ENV.items():
        os.environ.setdefault(key, value)
    from infra.app import build_app  # imported late: jsii starts a node process

    app, stack = build_app(
        settings,
        pipeline,
        overrides=overrides,
        outdir=outdir or tempfile.mkdtemp(prefix="inferbus-cdk-"),
        context={"aws:cdk:bundling-stacks": [], **(context or {})},
        builtin_cloud_formation_validation=False,
    )
    return app.synth().get_stack_by_name(stack.stack_name).template
