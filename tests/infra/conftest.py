"""The template variants the settings can produce, each synthesized once per session (the default
template is the session fixture in tests/conftest.py)."""

from __future__ import annotations

import pytest

from infra.settings import InferbusSettings

FIS_SETTINGS = InferbusSettings(fault_injection_experiments=True)


def _synthesize(settings: InferbusSettings, tmp_path_factory: pytest.TempPathFactory, name: str) -> dict:
    from inferbus.runtime.template import synthesize

    return synthesize(settings, outdir=str(tmp_path_factory.mktemp(name)))


@pytest.fixture(scope="session")
def image_variant_template(tmp_path_factory):
    """The text encoder as a container image."""
    return _synthesize(InferbusSettings(text_encoder_package="image"), tmp_path_factory, "cdk.image")


@pytest.fixture(scope="session")
def fis_template(tmp_path_factory):
    """With the opt-in AWS FIS experiments."""
    return _synthesize(FIS_SETTINGS, tmp_path_factory, "cdk.fis")
