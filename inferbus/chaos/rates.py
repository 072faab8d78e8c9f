"""The faults a chaos run injects and their shares: one definition, which the ``inferbus chaos`` flags
are made from (each field's metadata carries its help and, where it differs from the field's
name, its flag).

Example
-------
>>> FaultRates.only(timeout_rate=1.0).record_error_rate
0.0
>>> [FaultRates.flag(rate) for rate in fields(FaultRates)][:3]
['--record-error-rate', '--timeout-rate', '--crash-rate']
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["FaultRates"]


def _rate(default: float, help_text: str, *, flag: str | None = None) -> Any:
    return field(default=default, metadata={"help": help_text, "flag": flag})


@dataclass(frozen=True)
class FaultRates:
    """Every fault a chaos run can inject, and its share: the one definition the CLI's flags come from.

    The defaults are set so that what is observed clears 20 % transient errors, 5 % timeouts and
    10 % duplicate deliveries: a record that is a duplicate, or in a batch that timed out, draws
    no error; a step that drew an error draws no timeout. Each store request is tried 3 times.
    """

    record_error_rate: float = _rate(0.27, "share of claimed records failing transiently")
    timeout_rate: float = _rate(0.06, "share of consumer invocations timing out right after claiming their records")
    crash_after_publish_rate: float = _rate(
        0.02, "share of consumer invocations dying after publishing half their first group of results and completing "
        "those claims", flag="--crash-rate")
    crash_before_complete_rate: float = _rate(
        0.02, "share of consumer invocations dying between publishing a group of results and completing its claims: "
        "those results may be published again")
    claim_throttle_rate: float = _rate(0.2, "share of claim requests the claims store throttles (DynamoDB) or drops (Redis)")
    complete_throttle_rate: float = _rate(0.2, "share of completion and release requests the claims store throttles (DynamoDB) or drops (Redis)")
    put_events_throttle_rate: float = _rate(0.1, "share of a consumer's PutEvents entries throttled")
    duplicate_rate: float = _rate(0.12, "share of processed records delivered twice")
    step_error_rate: float = _rate(0.22, "share of workflow step invocations failing transiently")
    step_timeout_rate: float = _rate(0.08, "share of workflow step invocations timing out")
    latency_ms: float = _rate(0.0, "added to every invocation, in milliseconds")

    def __post_init__(self) -> None:
        for rate in fields(self):
            value = getattr(self, rate.name)
            if rate.name == "latency_ms":
                if value < 0:
                    raise ValueError(f"latency_ms must be 0 or more, got {value}")
            elif not 0.0 <= value <= 1.0:
                raise ValueError(f"{rate.name} must be in [0, 1], got {value}")

    @classmethod
    def only(cls, **rates: float) -> FaultRates:
        """Every rate 0 but those given (for a test that wants one fault)."""
        return cls(**{**{rate.name: 0.0 for rate in fields(cls)}, **rates})

    @staticmethod
    def flag(rate: dataclasses.Field[Any]) -> str:
        """The CLI flag of ``rate``."""
        return rate.metadata.get("flag") or "--" + rate.name.replace("_", "-")
