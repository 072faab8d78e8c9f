"""How the scaffold names things: component and module names, event types, Python identifiers.

=========================  =====================================================================
from ``iris-classifier``   e.g.
=========================  =====================================================================
module                     ``iris_classifier``: ``functions/iris_classifier/``,
                           ``pipeline/iris_classifier.py``, ``contracts/iris_classifier.py``,
                           ``tests/functional/test_iris_classifier.py``
construct id               ``IrisClassifier`` (see :mod:`inferbus.model.names`)
=========================  =====================================================================

Example
-------
>>> module_name("iris-classifier")
'iris_classifier'
>>> derived_result_type("IrisSubmitted", classifier=True), derived_result_type("HousePriced", classifier=False)
('IrisClassified', 'HousePricedScored')
>>> identifier("input.1"), identifier("X"), identifier("class"), identifier("2nd")
('input_1', 'x', 'class_', 'input_2nd')
"""

from __future__ import annotations

import importlib.util
import keyword
import re
from pathlib import Path

from inferbus.model.names import MAX_NAME, NAME, STEM

from .errors import ScaffoldError

__all__ = ["check_component_name", "check_event_type", "derived_result_type", "identifier", "model_name_of", "module_name", "unique"]

SUBMITTED = "Submitted"
# Names pydantic reserves on a model (BaseModel's own attributes and its protected namespace).
RESERVED_FIELDS = frozenset({
    "construct", "copy", "dict", "fields", "json", "parse_file", "parse_obj", "parse_raw", "schema", "schema_json",
    "validate", "update_forward_refs", "from_orm",
})


def module_name(name: str) -> str:
    """The Python module of a component: its kebab-case name with ``_``."""
    return name.replace("-", "_")


def check_component_name(name: str, *, declared: set[str], functions: Path | None = None) -> None:
    """Raise :class:`ScaffoldError` unless ``name`` is a kebab-case name no component has yet.

    A name whose module would shadow an importable package (``json``, ``numpy``) is refused
    too: ``functions/`` is the root of the Lambda bundle, so ``functions/json/`` would hide
    the standard library's ``json`` from every handler. A module in ``functions`` itself is
    not another package: the files that are in the way are named later.
    """
    if not (NAME.fullmatch(name) and len(name) <= MAX_NAME):
        raise ScaffoldError(f"component name {name!r} must be kebab-case (lowercase words joined by '-', starting with "
                            f"a letter, at most {MAX_NAME} characters), e.g. iris-classifier")
    if name in declared:
        raise ScaffoldError(f"a component named {name!r} is already declared in pipeline/: choose another name")
    module = module_name(name)
    spec = None if keyword.iskeyword(module) else importlib.util.find_spec(module)
    places = [Path(place) for place in (spec.submodule_search_locations or [spec.origin or ""])] if spec else []
    if functions is not None and places and all(functions.resolve() in place.resolve().parents for place in places):
        spec = None  # functions/<module>/: a leftover of ours, reported as a file in the way
    if keyword.iskeyword(module) or spec is not None:
        raise ScaffoldError(f"component name {name!r} would make a module {module!r} that hides an existing one "
                            f"(Python keyword or installed package): choose another name, e.g. {name}-consumer")


def check_event_type(event_type: str, option: str) -> None:
    """Raise :class:`ScaffoldError` unless ``event_type`` is PascalCase (``IrisSubmitted``)."""
    if not STEM.fullmatch(event_type):
        raise ScaffoldError(f"{option} {event_type!r} must be PascalCase (a capital letter, then letters and digits), "
                            "e.g. IrisSubmitted")


def derived_result_type(event_type: str, *, classifier: bool) -> str:
    """The default result type: ``IrisSubmitted`` -> ``IrisClassified`` (a classifier) or ``IrisScored``."""
    stem = event_type.removesuffix(SUBMITTED) or event_type
    return f"{stem}{'Classified' if classifier else 'Scored'}"


def identifier(name: str) -> str:
    """A graph's input or output name as a snake_case Python identifier that pydantic accepts."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip())  # camelCase -> camel_Case
    text = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_").lower()
    if not text:
        text = "value"
    if text[0].isdigit():
        text = f"input_{text}"
    if text.startswith(("model_validate", "model_dump")):  # pydantic's protected namespaces
        text = f"graph_{text}"
    if keyword.iskeyword(text) or text in RESERVED_FIELDS:
        text = f"{text}_"
    return text


def unique(names: list[str], taken: set[str] = frozenset()) -> list[str]:
    """``names`` with a ``_2``, ``_3``, ... suffix where one repeats or is ``taken``.

    >>> unique(["x", "x", "model"], {"model"})
    ['x', 'x_2', 'model_2']
    """
    seen = set(taken)
    result = []
    for name in names:
        candidate, n = name, 1
        while candidate in seen:
            n += 1
            candidate = f"{name}_{n}"
        seen.add(candidate)
        result.append(candidate)
    return result


def model_name_of(model: Path, option: str) -> str:
    """The manifest name a model file gets from its file name: ``Iris_LogReg.onnx`` -> ``iris-logreg``.

    Raises
    ------
    ScaffoldError
        When no valid name can be made of it (the message names ``option``).
    """
    words = "".join(c if c.isalnum() else "-" for c in model.stem.lower()).split("-")
    name = "-".join(word for word in words if word)
    if not name or not name[0].isalpha():
        name = f"model-{name}".rstrip("-")
    if not NAME.fullmatch(name):
        raise ScaffoldError(f"{option} {model}: cannot make a model name from {model.stem!r}; rename the file to "
                            "lowercase words joined by '-', e.g. iris-logreg.onnx")
    return name
