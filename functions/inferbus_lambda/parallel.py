"""Joining a workflow's parallel branches into one result event.

A ``Parallel`` state ends with a list: one output per branch, in the order of its branches. When
each branch answers its own part of the result (a detector the boxes, a scene classifier the
label), :func:`merge_branches` joins those parts into one event's ``data`` and validates it against
its contract, so a branch that answers the wrong fields fails the workflow here, by name, and not
downstream.

Example
-------
>>> from inferbus_lambda.contracts import TextSubmitted
>>> merge_branches(TextSubmitted, [{"text": "hello"}])
{'text': 'hello'}
>>> merge_branches(TextSubmitted, [{"text": "a"}, {"text": "b"}])
Traceback (most recent call last):
...
ValueError: branches 0 and 1 both answer 'text': each field of the result comes from one branch
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .contracts.core import EventData

__all__ = ["merge_branches"]


def merge_branches(contract: type[EventData], branches: Sequence[Mapping[str, Any]], **fields: Any) -> dict[str, Any]:
    """The union of the branches' fields and ``fields``, validated as ``contract``: the result's ``data``.

    Parameters
    ----------
    contract
        The event type the workflow emits (its :class:`EventData` model).
    branches
        The ``Parallel`` state's output: one mapping of result fields per branch.
    fields
        Fields that no branch computes, such as ``input_id``.

    Raises
    ------
    ValueError
        When two branches (or a branch and ``fields``) set the same field.
    pydantic.ValidationError
        When the union is not a valid ``contract``: a field missing, extra or out of range.
    """
    merged: dict[str, Any] = dict(fields)
    owner: dict[str, Any] = dict.fromkeys(fields, "the caller")
    for index, branch in enumerate(branches):
        for name, value in branch.items():
            if name in owner:
                raise ValueError(f"branches {owner[name]} and {index} both answer {name!r}: "
                                 "each field of the result comes from one branch")
            owner[name], merged[name] = index, value
    return contract.model_validate(merged).model_dump(mode="json")
