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
def stacks(tmp_path_factory: pytest.TempPathFactory):
    """The inferbus app's templates (the core and a nested stack per component), synthesized once
    (cdk-nag runs during synth and fails it on an error; every template is checked against
    CloudFormation's limits)."""
    from inferbus.template import synthesize_stacks

    return synthesize_stacks(outdir=str(tmp_path_factory.mktemp("cdk.out")))


@pytest.fixture(scope="session")
def template(stacks) -> dict:
    """The inferbus stack's template: the core and its nested stacks flattened into one, as the
    embedded runtime and the tools read it."""
    return stacks.flattened()
