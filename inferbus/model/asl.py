"""ASL helpers: the ``${Name}`` placeholders a state machine's definition carries, and their substitution
as CloudFormation applies ``DefinitionSubstitutions`` (the stack fills them; the embedded runtime too)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["PLACEHOLDER", "placeholders", "substitute"]

# CloudFormation's ``${Name}`` placeholders (Fn::Sub, state machines' DefinitionSubstitutions).
PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")


def placeholders(text: str) -> set[str]:
    """The ``${Name}`` placeholders of a text (an ASL definition).

    >>> sorted(placeholders('{"Resource": "${FnArn}", "Q": "${ReviewQueueUrl}"}'))
    ['FnArn', 'ReviewQueueUrl']
    """
    return set(PLACEHOLDER.findall(text))


def substitute(text: str, values: Mapping[str, Any]) -> str:
    """Replace every ``${Name}`` in ``text`` with its value, as CloudFormation applies DefinitionSubstitutions.

    Raises
    ------
    KeyError
        Naming the placeholders that have no value (CloudFormation would deploy them unreplaced).

    >>> substitute('{"Resource": "${FnArn}"}', {"FnArn": "arn:x"})
    '{"Resource": "arn:x"}'
    """
    missing = sorted(placeholders(text) - set(values))
    if missing:
        raise KeyError(missing)
    return PLACEHOLDER.sub(lambda match: str(values[match.group(1)]), text)
