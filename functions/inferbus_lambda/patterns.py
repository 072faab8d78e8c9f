"""EventBridge event patterns, evaluated as EventBridge documents them: does a rule take an event?

The unrouted-events check (:mod:`.unrouted`) asks this of every rule on the bus, so that an
event no rule takes is kept with its reason instead of vanishing. It runs inside a Lambda
function, so it lives in the shared package and imports nothing else.

What is evaluated (the documented content filters):

- a pattern is an object; a key whose value is an object descends into the event, a key whose
  value is an array is a leaf: the event's value there must match one of its entries;
- an array in the event matches when one of its elements does (arrays of objects too: paths
  run through them, as EventBridge flattens them);
- entries: a string, number, boolean or ``null`` (exact; numbers compared as numbers, a
  boolean is never a number), ``prefix``, ``suffix``, ``equals-ignore-case``, ``wildcard``,
  ``anything-but`` (a value, a list, or a ``prefix``/``suffix``/``equals-ignore-case``/
  ``wildcard``), ``numeric`` (one or two comparisons), ``exists``, ``cidr``;
- ``$or``: an array of patterns, one of which must match (beside the other keys).

``exists`` and every other filter look at leaf values only: an object or an empty array is not
one. A pattern that uses anything else raises :class:`UnsupportedPatternError`, so a caller never
guesses.

Example
-------
>>> pattern = {"detail-type": ["ImageSubmitted"], "detail": {"data": {"analysis": ["full"]}}}
>>> matches(pattern, {"detail-type": "ImageSubmitted", "detail": {"data": {"analysis": "full"}}})
True
>>> matches(pattern, {"detail-type": "ImageSubmitted", "detail": {"data": {"analysis": "Full"}}})
False
"""

from __future__ import annotations

import ipaddress
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

__all__ = ["UnsupportedPatternError", "matches"]

COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


class UnsupportedPatternError(ValueError):
    """A pattern this evaluator does not know: the message names the filter."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _flattened(nodes: list[Any]) -> Iterator[Any]:
    """``nodes`` with every array replaced by its elements, in order, however deep."""
    pending = list(reversed(nodes))
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(reversed(node))
        else:
            yield node


def _leaves(nodes: list[Any]) -> list[Any]:
    """The leaf values among ``nodes``, arrays flattened; objects are not leaves."""
    return [node for node in _flattened(nodes) if not isinstance(node, Mapping)]


def _children(nodes: list[Any], key: str) -> list[Any]:
    """The values under ``key`` in each object among ``nodes`` (through arrays)."""
    return [node[key] for node in _flattened(nodes) if isinstance(node, Mapping) and key in node]


def _wildcard(expression: str) -> re.Pattern[str]:
    parts = re.split(r"(?<!\\)\*", expression)
    return re.compile(".*".join(re.escape(part.replace("\\*", "*")) for part in parts), re.DOTALL)


def _string_filter(name: str, argument: Any) -> Callable[[Any], bool]:
    """prefix, suffix, equals-ignore-case, wildcard (with their equals-ignore-case forms)."""
    ignore_case = isinstance(argument, Mapping)
    if ignore_case:
        if set(argument) != {"equals-ignore-case"} or name not in ("prefix", "suffix"):
            raise UnsupportedPatternError(f"{name}: {argument!r}")
        argument = argument["equals-ignore-case"]
    if not isinstance(argument, str):
        raise UnsupportedPatternError(f"{name} takes a string, got {argument!r}")
    if name == "wildcard":
        regex = _wildcard(argument)
        return lambda value: isinstance(value, str) and regex.fullmatch(value) is not None
    if name == "equals-ignore-case":
        folded = argument.casefold()
        return lambda value: isinstance(value, str) and value.casefold() == folded
    test = str.startswith if name == "prefix" else str.endswith
    if ignore_case:
        folded = argument.casefold()
        return lambda value: isinstance(value, str) and test(value.casefold(), folded)
    return lambda value: isinstance(value, str) and test(value, argument)


def _numeric(arguments: Any) -> Callable[[Any], bool]:
    if not isinstance(arguments, list) or len(arguments) not in (2, 4):
        raise UnsupportedPatternError(f"numeric takes one or two comparisons, got {arguments!r}")
    checks = []
    for symbol, bound in zip(arguments[::2], arguments[1::2], strict=True):
        if symbol not in COMPARISONS or not _is_number(bound):
            raise UnsupportedPatternError(f"numeric: {symbol!r} {bound!r}")
        checks.append((COMPARISONS[symbol], bound))
    return lambda value: _is_number(value) and all(compare(value, bound) for compare, bound in checks)


def _cidr(argument: Any) -> Callable[[Any], bool]:
    network = ipaddress.ip_network(argument, strict=False)

    def inside(value: Any) -> bool:
        try:
            return isinstance(value, str) and ipaddress.ip_address(value) in network
        except ValueError:
            return False

    return inside


def _exact(expected: Any) -> Callable[[Any], bool]:
    if _is_number(expected):
        return lambda value: _is_number(value) and value == expected
    if expected is None or isinstance(expected, bool | str):
        return lambda value: type(value) is type(expected) and value == expected
    raise UnsupportedPatternError(f"a pattern value must be a string, number, boolean or null, got {expected!r}")


def _anything_but(argument: Any) -> Callable[[Any], bool]:
    if isinstance(argument, Mapping):
        if len(argument) != 1 or next(iter(argument)) not in ("prefix", "suffix", "equals-ignore-case", "wildcard"):
            raise UnsupportedPatternError(f"anything-but: {argument!r}")
        (name, inner), = argument.items()
        inner_values = inner if isinstance(inner, list) else [inner]
        tests = [_string_filter(name, value) for value in inner_values]
    else:
        tests = [_exact(value) for value in (argument if isinstance(argument, list) else [argument])]
    return lambda value: not any(test(value) for test in tests)


def _entry(entry: Any) -> Callable[[Any], bool] | bool:
    """One entry of a leaf array: a test on a value, or ``exists``'s boolean."""
    if not isinstance(entry, Mapping):
        return _exact(entry)
    if len(entry) != 1:
        raise UnsupportedPatternError(f"one filter per entry, got {entry!r}")
    (name, argument), = entry.items()
    if name == "exists":
        if not isinstance(argument, bool):
            raise UnsupportedPatternError(f"exists takes true or false, got {argument!r}")
        return argument
    if name in ("prefix", "suffix", "equals-ignore-case", "wildcard"):
        return _string_filter(name, argument)
    if name == "anything-but":
        return _anything_but(argument)
    if name == "numeric":
        return _numeric(argument)
    if name == "cidr":
        return _cidr(argument)
    raise UnsupportedPatternError(f"unknown filter {name!r}")


def _leaf_matches(entries: Sequence[Any], values: list[Any]) -> bool:
    for entry in entries:
        test = _entry(entry)
        if isinstance(test, bool):  # exists
            if test == bool(values):
                return True
        elif any(test(value) for value in values):
            return True
    return False


def _object_matches(pattern: Mapping[str, Any], nodes: list[Any]) -> bool:
    for key, expected in pattern.items():
        if key == "$or":
            if not isinstance(expected, list) or not expected:
                raise UnsupportedPatternError(f"$or takes a non-empty array of patterns, got {expected!r}")
            if not any(_object_matches(alternative, nodes) for alternative in expected):
                return False
        elif isinstance(expected, Mapping):
            if not _object_matches(expected, _children(nodes, key)):
                return False
        elif isinstance(expected, list):
            if not _leaf_matches(expected, _leaves(_children(nodes, key))):
                return False
        else:
            raise UnsupportedPatternError(f"{key}: a pattern value must be an object or an array, got {expected!r}")
    return True


def matches(pattern: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """Whether EventBridge would deliver ``event`` (as delivered to a target) to a rule with ``pattern``.

    Raises
    ------
    UnsupportedPatternError
        For a filter this module does not evaluate, naming it.
    """
    return _object_matches(pattern, [event])

