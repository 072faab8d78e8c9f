"""The template variants the settings can produce, each synthesized once per session (the default
template is the session fixture in tests/conftest.py)."""

from __future__ import annotations

import pytest

from inferbus.model.settings import InferbusSettings
from tests.declared import PIPELINE

FIS_SETTINGS = InferbusSettings(fault_injection_experiments=True)
PROD_SETTINGS = InferbusSettings(stage="prod")  # Lambda Insights is on by default in prod
# The first workflow task, shipped as a container image instead of in the zip bundle.
IMAGE_TASK = next((w, stem, task) for w in PIPELINE.workflows for stem, task in w.tasks.items())


def _synthesize(settings: InferbusSettings, tmp_path_factory: pytest.TempPathFactory, name: str,
                overrides: dict | None = None) -> dict:
    from inferbus.template import synthesize

    return synthesize(settings, overrides=overrides, outdir=str(tmp_path_factory.mktemp(name)))


@pytest.fixture(scope="session")
def image_variant_template(tmp_path_factory):
    """One workflow task as a container image."""
    workflow, stem, _ = IMAGE_TASK
    return _synthesize(InferbusSettings(), tmp_path_factory, "cdk.image", {f"{workflow.name}.{stem}.package": "image"})


@pytest.fixture(scope="session")
def fis_template(tmp_path_factory):
    """With the opt-in AWS FIS experiments."""
    return _synthesize(FIS_SETTINGS, tmp_path_factory, "cdk.fis")


@pytest.fixture(scope="session")
def prod_template(tmp_path_factory):
    """The prod stage: Lambda Insights on every function, and the memory alarms it allows."""
    return _synthesize(PROD_SETTINGS, tmp_path_factory, "cdk.prod")
