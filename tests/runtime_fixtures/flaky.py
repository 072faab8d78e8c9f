"""Raises TransientError the first FAIL_TIMES times it sees a key, then succeeds.

The count lives in a module global, so it resets on a cold start (``LocalFunction.load``).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from tests.runtime_fixtures import log

ATTEMPTS: Counter[str] = Counter()


class TransientError(Exception):
    """A failure worth retrying (Step Functions sees errorType ``TransientError``)."""


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    key = event.get("key", "default")
    ATTEMPTS[key] += 1
    log("attempt", key=key, attempt=ATTEMPTS[key])
    if ATTEMPTS[key] <= int(os.environ.get("FAIL_TIMES", "1")):
        raise TransientError(f"attempt {ATTEMPTS[key]} of {key} failed")
    return {"key": key, "attempts": ATTEMPTS[key]}
