"""Shared fixtures: fake AWS credentials for every test, and ONE synthesized template per session."""

from __future__ import annotations

import os

import pytest

for key, value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}.items():
    os.environ[key] = value


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The inferbus stack's template, synthesized once (cdk-nag runs during synth and fails it on an error)."""
    from inferbus.template import synthesize

    return synthesize(outdir=str(tmp_path_factory.mktemp("cdk.out")))
