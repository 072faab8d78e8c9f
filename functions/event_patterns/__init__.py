"""EventBridge event patterns, matched as AWS documents them (the semantics of AWS's event-ruler).

One implementation, shared by the Lambda bundle and the embedded runtime:

- the unrouted-events check (``inferbus_lambda.unrouted``), inside a Lambda function, asks of every event
  whether any rule of the bus takes it, so an event no rule takes is kept with its reason;
- the embedded runtime matches every rule with it in place of moto 5.2.5's matcher, which
  differs from AWS in several documented cases (``inferbus.runtime.moto_patches``), and
  ``inferbus rules test`` answers with it.

It is a package of its own under ``functions/`` so that both import it without one importing the
other: it ships in the bundle of the functions that import it, and imports nothing but the
standard library (no moto, no boto3). The semantics, and where each was settled
(``tests/pattern_cases.py`` holds the documented cases it is checked on):

- A pattern is an object; each field holds a nested pattern or a non-empty array of matchers;
  fields are ANDed, the matchers of one field ORed (AWS "Creating event patterns").
- The event's values are its *leaves*. An array is crushed into its elements (nested arrays
  too), so ``[3]`` matches ``[[1, 2], [3]]``; an object inside an array is read field by field
  ("JSON Array Matching", event-ruler README). Fields of one pattern object that meet inside an
  array must come from the same element: ``{"a": {"b": ["x"], "c": ["y"]}}`` does not match
  ``a: [{b: x}, {c: y}]`` (``rulesForJSONEvent``, which EventBridge uses).
- ``exists`` works on leaves only: an empty array, an empty object, or an object has no leaf
  there, so ``exists: true`` fails and ``exists: false`` matches (event-ruler README "Exists
  matching"; AWS "Comparison operators only work on leaf nodes").
- Values match by JSON type: ``[1]`` matches the number 1 (and ``1.0``, ``1e0``) but not
  ``true`` or ``"1"``; ``[true]`` only the literal ``true``; ``numeric`` only JSON numbers
  (event-ruler README "JSON text matching" and "Numeric matching"; its rule compiler turns a
  number into an exact-text and a numeric-equality matcher and a boolean into exact text).
- ``anything-but`` needs the field present and matches a value of any other type
  (``"444"`` matches ``anything-but: [111, 222]``: event-ruler's RulerTest/ACMachineTest).
- String operators (``prefix``, ``suffix``, ``equals-ignore-case``, ``wildcard``, ``cidr``)
  match strings only.
- ``$or`` is an OR only when it holds an array of at least two objects (event-ruler README
  "The $or Primitive"); otherwise it is an ordinary field name.

Example
-------
>>> compile_pattern({"detail": {"analysis": [{"exists": False}]}}).matches({"detail": {"analysis": []}})
True
>>> compile_pattern({"n": [1]}).matches({"n": True})
False
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = ["CompiledPattern", "PatternError", "compile_pattern", "compile_pattern_text"]

OPERATORS = ("prefix", "suffix", "equals-ignore-case", "wildcard", "anything-but", "numeric", "exists", "cidr")
LOWER_BOUNDS, UPPER_BOUNDS = (">", ">="), ("<", "<=")
COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "=": lambda a, b: a == b,
    ">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
}
_MISSING = object()  # a field the event does not have
_OR = object()  # the key of a compiled $or (a field may be named "$or" too)


class PatternError(ValueError):
    """A pattern EventBridge would refuse; the message says why (as ``InvalidEventPatternException`` does)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same_json_value(event_value: Any, pattern_value: Any) -> bool:
    """Equality of two JSON scalars, type first: ``1 == 1.0`` but ``1 != true`` and ``1 != "1"``."""
    if _is_number(pattern_value):
        return _is_number(event_value) and float(event_value) == float(pattern_value)
    if isinstance(pattern_value, bool) or pattern_value is None:
        return event_value is pattern_value
    return isinstance(event_value, str) and event_value == pattern_value


def _wildcard_regex(where: str, text: str) -> re.Pattern[str]:
    if "**" in text:
        raise PatternError(f"{where}: consecutive wildcard characters are not allowed")
    parts, i = [], 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            if i + 1 >= len(text) or text[i + 1] not in "*\\":
                raise PatternError(f"{where}: a backslash may only escape * or \\")
            parts.append(re.escape(text[i + 1]))
            i += 2
            continue
        parts.append(".*" if char == "*" else re.escape(char))
        i += 1
    return re.compile("".join(parts), re.DOTALL)


def _strings(where: str, value: Any, *, allow_list: bool) -> list[str]:
    values = value if allow_list and isinstance(value, list) else [value]
    if not values or not all(isinstance(v, str) for v in values):
        raise PatternError(f"{where} must be a string{' or a list of strings' if allow_list else ''}")
    return values


Test = Callable[[Any], bool]  # one leaf value -> does it match


def _string_test(operator: str, operand: Any, where: str, *, allow_list: bool) -> Test:
    """prefix / suffix / equals-ignore-case / wildcard, with their equals-ignore-case forms."""
    ignore_case = isinstance(operand, dict) and operator in ("prefix", "suffix")
    if ignore_case:
        if set(operand) != {"equals-ignore-case"}:
            raise PatternError(f"{where}: {operator} takes a string or {{\"equals-ignore-case\": string}}")
        operand = operand["equals-ignore-case"]
    texts = _strings(f"{where}.{operator}", operand, allow_list=allow_list or operator == "equals-ignore-case")
    if operator == "wildcard":
        regexes = [_wildcard_regex(f"{where}.wildcard", text) for text in texts]
        return lambda v: isinstance(v, str) and any(r.fullmatch(v) for r in regexes)
    if operator == "equals-ignore-case" or ignore_case:
        texts = [text.lower() for text in texts]
    fold = (lambda v: v.lower()) if operator == "equals-ignore-case" or ignore_case else (lambda v: v)
    if operator == "prefix":
        return lambda v: isinstance(v, str) and any(fold(v).startswith(t) for t in texts)
    if operator == "suffix":
        return lambda v: isinstance(v, str) and any(fold(v).endswith(t) for t in texts)
    return lambda v: isinstance(v, str) and fold(v) in texts


def _numeric_test(operand: Any, where: str) -> Test:
    if not isinstance(operand, list) or len(operand) not in (2, 4):
        raise PatternError(f"{where}.numeric takes [op, number] or [lower op, number, upper op, number]")
    pairs = list(zip(operand[::2], operand[1::2], strict=True))
    for op, number in pairs:
        if op not in COMPARE or not _is_number(number) or not math.isfinite(number):
            raise PatternError(f"{where}.numeric: {op!r} {number!r} is not an operator (<, <=, =, >=, >) and a number")
    if len(pairs) == 2 and not (pairs[0][0] in LOWER_BOUNDS and pairs[1][0] in UPPER_BOUNDS):
        raise PatternError(f"{where}.numeric: a range is a lower bound (> or >=) then an upper bound (< or <=)")
    return lambda v: _is_number(v) and all(COMPARE[op](float(v), float(number)) for op, number in pairs)


def _anything_but_test(operand: Any, where: str) -> Test:
    if isinstance(operand, dict):
        if len(operand) != 1 or next(iter(operand)) not in ("prefix", "suffix", "equals-ignore-case", "wildcard"):
            raise PatternError(f"{where}.anything-but takes a value, a list, or one of prefix, suffix, "
                               "equals-ignore-case, wildcard")
        ((operator, inner),) = operand.items()
        if isinstance(inner, dict):
            raise PatternError(f"{where}.anything-but.{operator} must be a string or a list of strings")
        excluded = _string_test(operator, inner, f"{where}.anything-but", allow_list=True)
        return lambda v: not excluded(v)  # a value that is not a string is never excluded
    values = operand if isinstance(operand, list) else [operand]
    if not values or not (all(isinstance(v, str) for v in values) or all(_is_number(v) for v in values)):
        raise PatternError(f"{where}.anything-but: values must be all strings or all numbers")
    return lambda v: not any(_same_json_value(v, excluded) for excluded in values)


def _cidr_test(operand: Any, where: str) -> Test:
    try:
        network = ipaddress.ip_network(operand, strict=False)
    except (TypeError, ValueError):
        raise PatternError(f"{where}.cidr: {operand!r} is not an IP network") from None

    def test(value: Any) -> bool:
        try:
            return isinstance(value, str) and ipaddress.ip_address(value) in network
        except ValueError:
            return False

    return test


@dataclass(frozen=True)
class _Field:
    """One field's matchers: ``exists`` (None if the field has no exists matcher) and value tests."""

    exists: tuple[bool, ...]
    tests: tuple[Test, ...]

    def matches(self, leaves: list[Any]) -> bool:
        if any(wanted == bool(leaves) for wanted in self.exists):
            return True
        return any(test(leaf) for leaf in leaves for test in self.tests)


def _matcher(element: Any, where: str) -> tuple[str, Any]:
    if isinstance(element, (str, int, float, bool)) or element is None:
        if isinstance(element, float) and not math.isfinite(element):
            raise PatternError(f"{where}: {element} is not a JSON number")
        return "value", lambda v: _same_json_value(v, element)
    if not isinstance(element, dict) or len(element) != 1:
        raise PatternError(f"{where}: a matcher is a value or an object with exactly one of {', '.join(OPERATORS)}")
    ((operator, operand),) = element.items()
    if operator == "exists":
        if not isinstance(operand, bool):
            raise PatternError(f"{where}.exists must be true or false")
        return "exists", operand
    if operator in ("prefix", "suffix", "equals-ignore-case", "wildcard"):
        return "value", _string_test(operator, operand, where, allow_list=False)
    if operator == "numeric":
        return "value", _numeric_test(operand, where)
    if operator == "anything-but":
        return "value", _anything_but_test(operand, where)
    if operator == "cidr":
        return "value", _cidr_test(operand, where)
    raise PatternError(f"{where}: unknown matcher {operator!r} (known: {', '.join(OPERATORS)})")


def _is_or(key: str, value: Any) -> bool:
    return key == "$or" and isinstance(value, list) and len(value) >= 2 and all(isinstance(v, dict) for v in value)


def _compile_object(pattern: Any, where: str) -> list[tuple[str, Any]]:
    if not isinstance(pattern, dict):
        raise PatternError(f"{where or 'the pattern'} must be a JSON object")
    compiled: list[tuple[Any, Any]] = []
    for key, value in pattern.items():
        path = f"{where}.{key}" if where else key
        if _is_or(key, value):
            compiled.append((_OR, [_compile_object(alternative, path) for alternative in value]))
        elif isinstance(value, dict):
            compiled.append((key, _compile_object(value, path)))
        elif isinstance(value, list):
            if not value:
                raise PatternError(f"{path}: empty arrays are not allowed")
            kinds = [_matcher(element, path) for element in value]
            compiled.append((key, _Field(tuple(v for k, v in kinds if k == "exists"),
                                         tuple(v for k, v in kinds if k == "value"))))
        else:
            raise PatternError(f"{path} must be an object or an array")
    return compiled


def _elements(node: Any) -> Iterator[Any]:
    """An array's elements with nested arrays crushed out; any other node is itself."""
    if isinstance(node, list):
        for item in node:
            yield from _elements(item)
    else:
        yield node


def _leaves(node: Any) -> list[Any]:
    """The scalar values at one path (objects there are not leaves)."""
    if node is _MISSING:
        return []
    return [item for item in _elements(node) if not isinstance(item, dict)]


def _object_matches(compiled: list[tuple[str, Any]], node: Any) -> bool:
    """Every field of the pattern object matches within ``node``, or within one element of it."""
    candidates = [item for item in _elements(node) if isinstance(item, dict)] if isinstance(node, list) else [node]
    return any(_fields_match(compiled, candidate) for candidate in candidates or [_MISSING])


def _fields_match(compiled: list[tuple[str, Any]], node: Any) -> bool:
    for key, matcher in compiled:
        if key is _OR:
            if not any(_fields_match(alternative, node) for alternative in matcher):
                return False
            continue
        child = node.get(key, _MISSING) if isinstance(node, dict) else _MISSING
        if isinstance(matcher, _Field):
            if not matcher.matches(_leaves(child)):
                return False
        elif not _object_matches(matcher, child if isinstance(child, (dict, list)) else _MISSING):
            return False
    return True


@dataclass(frozen=True)
class CompiledPattern:
    """A validated pattern, ready to match many events."""

    pattern: dict[str, Any]
    _compiled: tuple[tuple[str, Any], ...]

    def matches(self, event: dict[str, Any]) -> bool:
        """Whether EventBridge would deliver ``event`` (as a target receives it) to a rule with this pattern."""
        return _fields_match(list(self._compiled), event)


def compile_pattern(pattern: Any) -> CompiledPattern:
    """Validate and compile an event pattern (a parsed JSON object).

    Raises
    ------
    PatternError
        For a pattern EventBridge would refuse, saying where and why.
    """
    return CompiledPattern(pattern, tuple(_compile_object(pattern, "")))


@lru_cache(maxsize=1024)
def compile_pattern_text(text: str) -> CompiledPattern:
    """:func:`compile_pattern` of a pattern's JSON text, cached: a rule's pattern is parsed once."""
    try:
        pattern = json.loads(text)
    except json.JSONDecodeError as error:
        raise PatternError(f"not JSON: {error}") from None
    return compile_pattern(pattern)
