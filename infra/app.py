"""CDK entry point (``cdk.json`` runs ``python -m infra.app``).

``build_app`` is what the tests and the embedded runtime call: they synthesize without
bundling and, in tests, without the slow built-in template validation.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import App, Environment

from .nag import add_nag_checks
from .settings import InferbusSettings
from .stack import InferbusStack


def build_app(settings: InferbusSettings | None = None, **app_props: Any) -> tuple[App, InferbusStack]:
    settings = settings or InferbusSettings()
    app = App(**app_props)
    add_nag_checks(app)
    stack = InferbusStack(app, settings.stack_name, settings=settings, env=Environment())
    return app, stack


if __name__ == "__main__":
    build_app()[0].synth()
