"""CDK entry point (``cdk.json`` runs ``python -m infra.app``).

``npx cdk deploy -c stage=dev`` deploys the stage ``dev`` (stack ``Inferbus-dev``, bus
``inferbus-dev``) beside the default one; every setting can be set the same way
(:mod:`infra.configuration`).

``build_app`` is what the tests and the embedded runtime call: they synthesize without
bundling and, in tests, without the slow built-in template validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import App, Environment

from inferbus.model.declarations import Pipeline
from inferbus.model.settings import InferbusSettings

from .configuration import configure
from .nag import add_nag_checks
from .stack import InferbusStack


def build_app(settings: InferbusSettings | None = None, pipeline: Pipeline | None = None, *,
              overrides: Mapping[str, Any] | None = None, **app_props: Any) -> tuple[App, InferbusStack]:
    """The app and its one stack.

    Parameters
    ----------
    settings
        Default: from the app's context (``-c``, ``cdk.json``), else the defaults.
    pipeline
        Default: the declarations in ``pipeline/``.
    overrides
        Component settings to change (``{"image-classifier.batch_size": 10}``), on top of context's.
    app_props
        Passed to ``App`` (``outdir``, ``context``, ...).
    """
    from pipeline import load_pipeline

    app = App(**app_props)
    context_settings, declared = configure(app.node.get_all_context(), pipeline or load_pipeline())
    settings = settings or context_settings
    declared = declared.with_overrides(overrides or {})
    add_nag_checks(app)
    stack = InferbusStack(app, settings.staged(settings.stack_name), settings=settings, pipeline=declared,
                          env=Environment())
    return app, stack


if __name__ == "__main__":
    import sys

    from inferbus.model.settings import SettingsError

    from . import NODE_NOTICE

    from .limits import CloudFormationLimitError, check_assembly, limit_error_of
    from .outdir import prune_stale_assets

    if NODE_NOTICE:
        print(NODE_NOTICE, file=sys.stderr)
    try:
        directory = build_app()[0].synth().directory
        check_assembly(directory)
        prune_stale_assets(directory)  # cdk.out keeps only this synth's assets
    except (SettingsError, CloudFormationLimitError) as error:  # one line saying what to fix
        raise SystemExit(f"inferbus: {error}") from None
    except Exception as error:  # CDK's own count of a stack's resources
        limit = limit_error_of(error)
        if limit is None:
            raise
        raise SystemExit(f"inferbus: {limit}") from None
