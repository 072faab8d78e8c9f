"""Imports run one way: Lambda package <- domain model <- infra <- runtime and CLI.

Read from the source (every import, lazy ones inside functions too), so a new module cannot
bring a cycle back without this test naming it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ROOT / "functions"
OURS = ("inferbus", "infra", "pipeline", "inferbus_lambda", "event_patterns", "tests", "bench", "models")
# Each layer, and the layers of ours it may import (itself always).
LAYERS = {
    "event_patterns": (),
    "inferbus_lambda": ("event_patterns",),
    "handlers": ("inferbus_lambda", "event_patterns"),  # functions/<handler package>/
    "inferbus.model": ("inferbus_lambda", "event_patterns"),
    "pipeline": ("inferbus.model", "inferbus_lambda"),
    "infra": ("inferbus.model", "inferbus_lambda", "event_patterns", "pipeline"),
}


def layer_of(module: str) -> str | None:
    """The layer a dotted module name belongs to (``None``: the runtime, the CLI and tools, which may import any)."""
    for layer in ("inferbus.model", "inferbus_lambda", "event_patterns", "pipeline", "infra"):
        if module == layer or module.startswith(layer + "."):
            return layer
    if module.partition(".")[0] not in OURS:
        return "handlers"  # a handler package under functions/
    return None


def module_name(path: Path) -> str:
    base = FUNCTIONS if path.is_relative_to(FUNCTIONS) else ROOT
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(source: str, module: str, *, is_package: bool = False) -> set[str]:
    """Every module that ``source`` (the module ``module``) imports, relative imports resolved."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            found.add(".".join([*base, *([node.module] if node.module else [])]))
    return found


def sources() -> list[Path]:
    folders = [ROOT / "inferbus" / "model", ROOT / "infra", ROOT / "pipeline", *FUNCTIONS.iterdir()]
    return sorted(path for folder in folders if folder.is_dir() for path in folder.rglob("*.py"))


@pytest.mark.parametrize("path", sources(), ids=lambda path: str(path.relative_to(ROOT)))
def test_a_module_imports_only_the_layers_below_its_own(path):
    own = layer_of(module_name(path))
    assert own is not None
    allowed = (own, *LAYERS[own])
    names = imported(path.read_text(), module_name(path), is_package=path.name == "__init__.py")
    wrong = sorted(name for name in names
                   if name.partition(".")[0] in OURS and layer_of(name) not in allowed)
    assert not wrong, f"{path.relative_to(ROOT)} ({own}) imports {wrong}; it may import {list(allowed)}"


def test_the_check_resolves_relative_imports_and_sees_a_wrong_one():
    source = "from ..runtime.resources import Resolver\nfrom .names import pascal\nimport infra.stack\n"
    names = imported(source, "inferbus.model.declarations")
    assert names == {"inferbus.runtime.resources", "inferbus.model.names", "infra.stack"}
    allowed = ("inferbus.model", *LAYERS["inferbus.model"])
    assert sorted(name for name in names if layer_of(name) not in allowed) == ["inferbus.runtime.resources", "infra.stack"]
