"""Construct tests: each construct on a bare ``Stack`` of its own, synthesized in milliseconds, no app, no moto."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template


@pytest.fixture
def synth() -> Callable[[Callable[[Stack], Any]], Template]:
    """``synth(build)``: a bare stack, ``build(stack)`` adds the construct under test, and its template."""

    def run(build: Callable[[Stack], Any]) -> Template:
        stack = Stack(App(), "Bare")
        build(stack)
        return Template.from_stack(stack)

    return run


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every construct test on one xdist worker (``--dist loadgroup``): loading aws-cdk-lib into jsii costs a
    worker about 18 s, once; the other worker runs the unit tests meanwhile."""
    for item in items:
        if "tests/constructs/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.xdist_group("cdk"))
