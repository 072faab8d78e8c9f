"""A package's names imported on first use (PEP 562): a function's cold init makes only what it names.

The contract domains (:mod:`.contracts`) and the environment models (:mod:`.environment`) are read
this way: a text step never defines the image contracts, a step never makes a consumer's environment.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["import_on_first_use"]


def import_on_first_use(package: str, module_of: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A package's module ``__getattr__``: ``name`` from the submodule ``module_of[name]``, kept in
    ``namespace`` (the package's globals) once imported.

    Example
    -------
    In a package's ``__init__``::

        __getattr__ = import_on_first_use(__name__, {"SceneSubmitted": "images"}, globals())
    """
    def __getattr__(name: str) -> Any:
        if name not in module_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module_of[name]}"), name)
        namespace[name] = value
        return value

    return __getattr__
