"""Did each rate-limited consumer of a chaos run hold its rate, and did the rate send anything to a DLQ?

A consumer with ``max_events_per_second`` (declared, or ``inferbus chaos --rate``) takes one token per
record from a bucket that holds at most ``burst(rate)`` tokens and refills at the rate
(:mod:`inferbus_lambda.rate_limit`). Over the ``t`` seconds from its first batch to its last, it can
therefore have taken at most ``burst + rate * t`` records with a token. The observed rate is every
record it took (processed) per second, redeliveries included: it is held if it is at most
``rate + burst / t``, the tolerance the burst allows and no more. The records it let through without a
token, on their last receive so as never to send one to a DLQ (metric ``RecordsOverRateLetThrough``),
are in the observed rate and also shown apart: they are the design's one way past the rate.

"Dead-lettered over rate": an input in a DLQ that the consumer never once admitted (every delivery
of it was sent back by the rate). The let-through on the last receive makes this 0 by design.

Example
-------
>>> held = RateHeld(consumer="scorer", declared=10.0, burst=10.0, taken=105, let_through=3, sent_back=40,
...                 seconds=10.0, dead_lettered_over_rate=0)
>>> held.observed, held.bound, held.held
(10.5, 11.0, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from inferbus_lambda.metric_names import RECORDS_LET_THROUGH, RECORDS_OVER_RATE
from inferbus_lambda.rate_limit import burst

__all__ = ["RateHeld", "rate_held"]


@dataclass
class RateHeld:
    """One rate-limited consumer's figures over a chaos run's incident (see the module)."""

    consumer: str
    declared: float  # max_events_per_second, from its function's environment (the template)
    burst: float  # the bucket's capacity
    taken: int  # records admitted (processed), token or not
    let_through: int  # of those, admitted without a token on their last receive
    sent_back: int  # deliveries sent back with a backoff (hidden, reported failed)
    seconds: float  # from the first admitted batch to the last
    dead_lettered_over_rate: int  # inputs in a DLQ never admitted: sent there by the rate

    @property
    def observed(self) -> float:
        """Records taken per second, let through or not (a single batch: over no time, reported as its count)."""
        return self.taken / self.seconds if self.seconds > 0 else float(self.taken)

    @property
    def bound(self) -> float:
        """The most :attr:`observed` can be: the rate, plus the burst spread over the run."""
        return self.declared + self.burst / self.seconds if self.seconds > 0 else self.burst

    @property
    def held(self) -> bool:
        return self.observed <= self.bound and self.dead_lettered_over_rate == 0


def rate_held(consumer: str, declared: float, admissions: Sequence[tuple[float, int]], metrics: dict[str, list[float]],
              *, admitted_ids: set[str], dead_letter_ids: set[str]) -> RateHeld:
    """The figures of ``consumer`` (limited to ``declared`` events/s) from what chaos recorded.

    Parameters
    ----------
    admissions
        (monotonic seconds, records) per batch admitted past the rate.
    metrics
        The function's EMF metrics, by name (``RecordsOverRate``, ``RecordsOverRateLetThrough``).
    admitted_ids, dead_letter_ids
        The inputs the consumer ever admitted; the inputs in its flow's DLQs.
    """
    times = [at for at, _ in admissions]
    return RateHeld(consumer=consumer, declared=declared, burst=burst(declared),
                    taken=sum(count for _, count in admissions),
                    let_through=int(sum(metrics.get(RECORDS_LET_THROUGH, []))),
                    sent_back=int(sum(metrics.get(RECORDS_OVER_RATE, []))),
                    seconds=max(times) - min(times) if times else 0.0,
                    dead_lettered_over_rate=len(dead_letter_ids - admitted_ids))
