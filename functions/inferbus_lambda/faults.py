"""Fault injection for chaos experiments: off unless ``INFERBUS_FAULTS`` is set.

The variable holds JSON, read at every invocation (so an experiment can be switched on
and off without a new container)::

    {"record_error_rate": 0.2, "timeout_rate": 0.05, "latency_ms": 50}

==============================  ======================================================  =======
key                             effect                                                  default
==============================  ======================================================  =======
``error_rate``                  share of invocations that fail at once with             0
                                :class:`TransientError` (workflow steps retry them)
``record_error_rate``           queue consumers: share of records that fail with a      0
                                transient error; the rest of the batch goes on
``timeout_rate``                share of invocations that run out of time after the     0
                                consumer claimed its records (:class:`InjectedTimeout`)
``crash_after_publish_rate``    queue consumers: share of invocations that die after    0
                                publishing the first half of their results and
                                completing their claims (:class:`InjectedCrash`)
``crash_before_complete_rate``  queue consumers: share of invocations that die right    0
                                after one group's ``PutEvents`` requests return, before
                                that group's claims are completed: the window where a
                                result can repeat (at most one group, 25 results)
``claim_throttle_rate``         queue consumers: share of claim requests                0
                                (``TransactWriteItems``) that DynamoDB throttles
``complete_throttle_rate``      queue consumers: share of completion and release        0
                                requests (``BatchWriteItem``) whose every item DynamoDB
                                leaves unprocessed (throttled)
``put_events_throttle_rate``    queue consumers: share of PutEvents entries that        0
                                EventBridge answers ``ThrottlingException`` (the
                                publisher retries them with backoff)
``latency_ms``                  added to every invocation before it does its work       0
``seed``                        seeds the draws, for a repeatable experiment            none
==============================  ======================================================  =======

A timeout and a crash are what the Lambda service does to an invocation, not errors the
handler raises: they derive from ``BaseException`` so no ``except Exception`` in handler code
can catch them, and the embedded runtime reports them as Lambda would
(``Sandbox.Timedout``, ``Runtime.ExitError``). In AWS the same experiments run as AWS FIS
templates; this switch is what the embedded runtime and the tests use, and it works the
same in a deployed function.

Example
-------
>>> import os
>>> os.environ["INFERBUS_FAULTS"] = '{"error_rate": 1.0}'
>>> inject_invocation_faults()
Traceback (most recent call last):
...
inferbus_lambda.errors.TransientError: injected fault (error_rate=1.0)
>>> del os.environ["INFERBUS_FAULTS"]
>>> inject_invocation_faults()  # no plan: nothing happens
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, fields

from .errors import TransientError

__all__ = ["FaultPlan", "InjectedCrash", "InjectedTimeout", "ThrottledEvents", "TransientError", "inject_invocation_faults"]

ENVIRONMENT_VARIABLE = "INFERBUS_FAULTS"
RATES = ("error_rate", "record_error_rate", "timeout_rate", "crash_after_publish_rate", "crash_before_complete_rate",
         "claim_throttle_rate", "complete_throttle_rate", "put_events_throttle_rate")
_DRAWS = random.Random()  # noqa: S311 - chaos, not crypto
_SEEDED: set[int] = set()


class InjectedTimeout(BaseException):  # noqa: N818 - named for what it stands for
    """Stands for the invocation reaching its deadline: the Lambda service stops it there."""


class InjectedCrash(BaseException):  # noqa: N818
    """Stands for the runtime process dying mid-invocation (out of memory, a segfault)."""


@dataclass(frozen=True)
class FaultPlan:
    error_rate: float = 0.0
    record_error_rate: float = 0.0
    timeout_rate: float = 0.0
    crash_after_publish_rate: float = 0.0
    put_events_throttle_rate: float = 0.0
    crash_before_complete_rate: float = 0.0
    claim_throttle_rate: float = 0.0
    complete_throttle_rate: float = 0.0
    latency_ms: float = 0.0
    seed: int | None = None

    def __post_init__(self) -> None:
        for name in RATES:
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{ENVIRONMENT_VARIABLE}.{name} must be in [0, 1], got {getattr(self, name)}")
        if self.latency_ms < 0:
            raise ValueError(f"{ENVIRONMENT_VARIABLE}.latency_ms must be 0 or more, got {self.latency_ms}")
        if self.seed is not None and self.seed not in _SEEDED:
            _SEEDED.add(self.seed)
            _DRAWS.seed(self.seed)

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

    @staticmethod
    def draw(rate: float) -> bool:
        """One draw: does the fault with this rate happen this time?"""
        return rate > 0 and _DRAWS.random() < rate

    @staticmethod
    def pick(count: int) -> int:
        """One of ``count`` places (``0 .. count - 1``) for a fault to strike."""
        return _DRAWS.randrange(count)


def inject_invocation_faults(*, timeouts: bool = True) -> FaultPlan | None:
    """Apply the plan at the start of an invocation: add latency, maybe fail the whole invocation.

    ``timeouts=False`` leaves the timeout draw to the handler (a queue consumer times out
    after it has claimed its records, the most telling moment). Returns the plan (for the
    faults a handler injects later), or ``None`` when fault injection is off.
    """
    plan = FaultPlan.from_environment()
    if plan is None:
        return None
    if plan.latency_ms:
        time.sleep(plan.latency_ms / 1000)
    if plan.draw(plan.error_rate):
        raise TransientError(f"injected fault (error_rate={plan.error_rate})")
    if timeouts and plan.draw(plan.timeout_rate):
        raise InjectedTimeout(f"injected timeout (timeout_rate={plan.timeout_rate})")
    return plan


class ThrottledEvents:
    """An EventBridge client that answers a share of PutEvents entries ``ThrottlingException``, as
    EventBridge reports a throttled entry (in the response, not as an error); the rest go through.

    Parameters
    ----------
    client
        The real client.
    rate
        The share of entries throttled (``put_events_throttle_rate``).
    """

    def __init__(self, client: object, rate: float) -> None:
        self.client = client
        self.rate = rate

    def put_events(self, Entries: list[dict[str, object]]) -> dict[str, object]:  # noqa: N803 - boto3's name
        throttled = [FaultPlan.draw(self.rate) for _ in Entries]
        passed = [entry for entry, throttle in zip(Entries, throttled, strict=True) if not throttle]
        answers = iter(self.client.put_events(Entries=passed)["Entries"] if passed else [])  # type: ignore[attr-defined]
        results = [{"ErrorCode": "ThrottlingException", "ErrorMessage": "injected (put_events_throttle_rate)"}
                   if throttle else next(answers) for throttle in throttled]
        return {"FailedEntryCount": sum(1 for result in results if result.get("ErrorCode")), "Entries": results}
