"""Fault injection for chaos experiments: off unless ``INFERBUS_FAULTS`` is set.

The variable holds JSON, read at every invocation (so an experiment can be switched on
and off without a new container)::

    {"error_rate": 0.2, "latency_ms": 50}

========================  =====================================================  =========
key                       effect                                                 default
========================  =====================================================  =========
``error_rate``            share of invocations that fail with                    0
                          :class:`TransientError`
``latency_ms``            added to every invocation before it does its work      0
========================  =====================================================  =========

In AWS the same experiments run as AWS FIS templates on the functions; this switch is
what the embedded runtime and the tests use, and it works the same in a deployed function.

Example
-------
>>> import os
>>> os.environ["INFERBUS_FAULTS"] = '{"error_rate": 1.0}'
>>> inject_invocation_faults()
Traceback (most recent call last):
...
inferbus_lambda.faults.TransientError: injected fault (error_rate=1.0)
>>> del os.environ["INFERBUS_FAULTS"]
>>> inject_invocation_faults()  # no plan: nothing happens
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, fields

__all__ = ["FaultPlan", "TransientError", "inject_invocation_faults"]

ENVIRONMENT_VARIABLE = "INFERBUS_FAULTS"


class TransientError(Exception):
    """A failure worth retrying. Step Functions retriers match it by this class name."""


@dataclass(frozen=True)
class FaultPlan:
    error_rate: float = 0.0
    latency_ms: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.error_rate <= 1.0:
            raise ValueError(f"{ENVIRONMENT_VARIABLE}.error_rate must be in [0, 1], got {self.error_rate}")
        if self.latency_ms < 0:
            raise ValueError(f"{ENVIRONMENT_VARIABLE}.latency_ms must be 0 or more, got {self.latency_ms}")

    @classmethod
    def from_environment(cls) -> FaultPlan | None:
        """The plan in ``INFERBUS_FAULTS``, or ``None`` when it is unset or empty."""
        raw = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
        if not raw:
            return None
        values = json.loads(raw)
        known = {field.name for field in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"{ENVIRONMENT_VARIABLE}: unknown keys {sorted(unknown)}, known: {sorted(known)}")
        return cls(**values)

    def fails(self) -> bool:
        """One draw: does this invocation (or record) fail?"""
        return self.error_rate > 0 and random.random() < self.error_rate  # noqa: S311 - chaos, not crypto


def inject_invocation_faults() -> FaultPlan | None:
    """Apply the plan at the start of an invocation: add latency, maybe fail the whole invocation.

    Returns the plan (for per-record faults), or ``None`` when fault injection is off.
    """
    plan = FaultPlan.from_environment()
    if plan is None:
        return None
    if plan.latency_ms:
        time.sleep(plan.latency_ms / 1000)
    if plan.fails():
        raise TransientError(f"injected fault (error_rate={plan.error_rate})")
    return plan
