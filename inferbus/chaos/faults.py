"""Faults on purpose, injected by wrapping a function's parts, never through its code path.

The embedded runtime lets a caller decorate each execution environment's handler
(``LocalFunction.add_handler_wrapper``); :func:`inject_faults` installs a :class:`FaultInjector`
there, which wraps, in each environment:

- the handler (latency; a workflow step's transient errors and timeouts);
- the claims store (:class:`FaultyClaimStore`: a timeout right after claiming, a crash before
  or after completing a group's claims) and its client: DynamoDB's throttles (:class:`ThrottledDynamoDB`),
  Redis's connection drops (:class:`UnreachableRedis`), at the same rates;
- the publisher's EventBridge client (:class:`ThrottledEvents`) and the publisher itself (the
  half published before a crash);
- the model (``infer``: records it fails on purpose).

What happened is counted from structured results (:class:`FaultCounts`): the wrappers' own
counters and the :class:`~inferbus_lambda.consumer.BatchReport` each batch returns, never from
log lines. The one fault that can publish a result twice is a claim left in progress after its
result was published (the invocation crashed before completing it, or the store would not take
the completion): the claims store wrapper records each such result by id, with its cause, as it
happens (:class:`Republishable`), so a crash that loses the batch's report loses none of them.
The rates have one definition, :class:`FaultRates`, whose fields carry the help the
``inferbus chaos`` flags show.

A timeout and a crash are what the Lambda service does to an invocation, not errors a handler
raises: :class:`InjectedTimeout` and :class:`InjectedCrash` derive from ``BaseException`` so no
``except Exception`` in handler code can catch them, and the embedded runtime reports them as
Lambda would (``Sandbox.Timedout``, ``Runtime.ExitError``). A deployed function carries none of
this: in AWS the same experiments run as AWS FIS templates (``infra/constructs/fault_injection.py``).

Example
-------
>>> rates = FaultRates.only(timeout_rate=1.0)
>>> (rates.timeout_rate, rates.record_error_rate)
(1.0, 0.0)
>>> injector = inject_faults(pipeline.consumer("image-classifier").function, rates)  # doctest: +SKIP
>>> injector.rates = None  # the incident is over  # doctest: +SKIP
"""

from __future__ import annotations

import enum
import functools
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inferbus_lambda.claims import ClaimRecord, ClaimStatus, ClaimStore, DynamoDBClaimStore, PutAnswer, RedisClaimStore
from inferbus_lambda.claims.base import event_key
from inferbus_lambda.consumer import BatchReport, RecordStatus
from inferbus_lambda.contracts import CloudEvent, EventData
from inferbus_lambda.errors import TransientError
from inferbus_lambda.publishing import PublishFailure

from .rates import FaultRates
from .store_costs import MeteredDynamoDB

if TYPE_CHECKING:
    from inferbus.runtime import LocalFunction

__all__ = ["Cause", "FaultCounts", "FaultInjector", "FaultRates", "FaultyClaimStore", "InjectedCrash", "InjectedTimeout",
           "Republishable", "ThrottledDynamoDB", "ThrottledEvents", "UnreachableRedis", "inject_faults"]


class InjectedTimeout(BaseException):  # noqa: N818 - named for what it stands for
    """Stands for the invocation reaching its deadline: the Lambda service stops it there."""


class InjectedCrash(BaseException):  # noqa: N818
    """Stands for the runtime process dying mid-invocation (out of memory, a segfault)."""


class Cause(str, enum.Enum):
    """Why a published result's claim stayed in progress (so a redelivery may publish it again)."""

    CRASH_BEFORE_COMPLETE = "crashed between publishing and completing"
    COMPLETION_NOT_WRITTEN = "completion not written"


@dataclass
class Republishable:
    """Results published whose claims were not completed, recorded as it happened: each record lets
    that result be published once more (a redelivery finds its claim in progress, then expired).

    Attributes
    ----------
    by_result
        Result event id -> how many times it was published and its claim left in progress.
    by_cause
        :class:`Cause` value -> how many such results.
    """

    by_result: Counter[str] = field(default_factory=Counter)
    by_cause: Counter[str] = field(default_factory=Counter)

    def record(self, result_ids: Iterable[str], cause: Cause) -> None:
        for result_id in result_ids:
            self.by_result[result_id] += 1
            self.by_cause[cause.value] += 1


@dataclass
class FaultCounts:
    """What the injector did and what the batches it wrapped reported, counted as it happened."""

    invocations: int = 0
    record_errors: int = 0  # records the model failed on purpose
    step_errors: int = 0  # step invocations failed on purpose
    timeouts: int = 0
    crashes_after_publish: int = 0
    crashes_before_complete: int = 0
    records_failed_by_claim_throttling: int = 0  # BatchReport.claims_unavailable
    duplicates_skipped: int = 0  # records reported duplicate
    republishable: Republishable = field(default_factory=Republishable)  # recorded by FaultyClaimStore


class _Draws:
    """One seeded stream of draws for an injector, shared by its environments' threads."""

    def __init__(self, seed: int | None) -> None:
        self._random = random.Random(seed)  # noqa: S311 - chaos, not crypto
        self._lock = threading.Lock()

    def __call__(self, rate: float) -> bool:
        if rate <= 0:
            return False
        with self._lock:
            return self._random.random() < rate


Rate = Callable[[], float]


class ThrottledEvents:
    """An EventBridge client that answers a share of PutEvents entries ``ThrottlingException``, as
    EventBridge reports a throttled entry (in the response, not as an error); the rest go through.

    Parameters
    ----------
    client
        The real client.
    rate
        The share of entries throttled, or a function returning it (read per request).
    draws
        Decides each entry; default, an unseeded stream.
    """

    def __init__(self, client: Any, rate: float | Rate, draws: Callable[[float], bool] | None = None) -> None:
        self.client = client
        self.rate: Rate = rate if callable(rate) else (lambda: float(rate))  # type: ignore[arg-type]
        self.draws = draws or _Draws(None)

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: N803 - boto3's name
        rate = self.rate()
        throttled = [self.draws(rate) for _ in Entries]
        passed = [entry for entry, throttle in zip(Entries, throttled, strict=True) if not throttle]
        answers = iter(self.client.put_events(Entries=passed)["Entries"] if passed else [])
        results = [{"ErrorCode": "ThrottlingException", "ErrorMessage": "injected (put_events_throttle_rate)"}
                   if throttle else next(answers) for throttle in throttled]
        return {"FailedEntryCount": sum(1 for result in results if result.get("ErrorCode")), "Entries": results}


class ThrottledDynamoDB:
    """A DynamoDB client that throttles a share of claim requests (``TransactWriteItems`` raises, as it
    does once the SDK's own retries are spent) and of completion and release requests (``BatchWriteItem``
    leaves every item unprocessed); everything else goes through.

    Parameters
    ----------
    client
        The real client.
    claim_rate, complete_rate
        The shares, or functions returning them (read per request).
    draws
        Decides each request; default, an unseeded stream.
    """

    def __init__(self, client: Any, *, claim_rate: float | Rate = 0.0, complete_rate: float | Rate = 0.0,
                 draws: Callable[[float], bool] | None = None) -> None:
        self.client = client
        self.claim_rate: Rate = claim_rate if callable(claim_rate) else (lambda: float(claim_rate))  # type: ignore[arg-type]
        self.complete_rate: Rate = (complete_rate if callable(complete_rate)  # type: ignore[assignment]
                                    else (lambda: float(complete_rate)))  # type: ignore[arg-type]
        self.draws = draws or _Draws(None)

    def transact_write_items(self, **request: Any) -> Any:
        if self.draws(self.claim_rate()):
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "injected: rate of requests exceeds "
                                         "the allowed throughput (claim_throttle_rate)"}}, "TransactWriteItems")
        return self.client.transact_write_items(**request)

    def batch_write_item(self, **request: Any) -> Any:
        if self.draws(self.complete_rate()):
            return {"UnprocessedItems": request["RequestItems"]}  # how DynamoDB answers a batch it throttles whole
        return self.client.batch_write_item(**request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


class UnreachableRedis:
    """A Redis client whose connection drops for a share of claim scripts (``claim_rate``) and of completion
    pipelines and releases (``complete_rate``), as a network blip or a failover does: the request raises
    ``redis.ConnectionError`` once the client's own retries are spent. Everything else goes through.

    Parameters
    ----------
    client
        The real client.
    claim_sha
        The SHA-1 of the claim script (``RedisClaimStore.claim_sha``): its ``EVALSHA`` is a claim.
    claim_rate, complete_rate, draws
        As :class:`ThrottledDynamoDB`'s.
    """

    def __init__(self, client: Any, *, claim_sha: str, claim_rate: Rate, complete_rate: Rate,
                 draws: Callable[[float], bool]) -> None:
        self.client, self.claim_sha = client, claim_sha
        self.claim_rate, self.complete_rate, self.draws = claim_rate, complete_rate, draws

    def _drop(self, rate: float, what: str) -> None:
        if self.draws(rate):
            from redis.exceptions import ConnectionError as RedisConnectionError

            raise RedisConnectionError(f"injected: connection lost during {what}")

    def evalsha(self, sha: str, *keys_and_args: Any) -> Any:
        if sha == self.claim_sha:
            self._drop(self.claim_rate(), "a claim (claim_throttle_rate)")
        return self.client.evalsha(sha, *keys_and_args)

    def delete(self, *names: Any) -> Any:
        self._drop(self.complete_rate(), "a release (complete_throttle_rate)")
        return self.client.delete(*names)

    def pipeline(self, *args: Any, **kwargs: Any) -> Any:
        pipeline = self.client.pipeline(*args, **kwargs)
        execute = pipeline.execute

        def execute_or_drop(*call_args: Any, **call_kwargs: Any) -> Any:
            self._drop(self.complete_rate(), "a completion (complete_throttle_rate)")
            return execute(*call_args, **call_kwargs)

        pipeline.execute = execute_or_drop
        return pipeline

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


@dataclass
class _Armed:
    """The faults drawn for the invocation an execution environment runs now."""

    timeout_after_claim: bool = False
    crash_after_publish: bool = False
    crash_before_complete: bool = False


class FaultyClaimStore(ClaimStore):
    """A claims store that times out or crashes where an invocation armed it to; the rest is ``inner``'s.

    Parameters
    ----------
    inner
        The store every call goes to.
    armed
        The running invocation's faults.
    counts
        Where what happened is counted (under ``lock``).
    """

    def __init__(self, inner: ClaimStore, armed: _Armed, counts: FaultCounts, lock: threading.Lock) -> None:
        super().__init__(scope=inner.scope, expires_after_seconds=inner.expires_after_seconds)
        self.inner, self.armed, self.counts, self.lock = inner, armed, counts, lock

    def claim(self, events: Sequence[CloudEvent[Any]], *, remaining_ms: int | None) -> list[ClaimStatus]:
        statuses = self.inner.claim(events, remaining_ms=remaining_ms)
        if self.armed.timeout_after_claim:
            self.armed.timeout_after_claim = False
            with self.lock:
                self.counts.timeouts += 1
            raise InjectedTimeout(f"injected timeout after claiming {statuses.count(ClaimStatus.CLAIMED)} records")
        return statuses

    def complete(self, completions: Sequence[tuple[CloudEvent[Any], Mapping[str, Any]]]) -> list[str]:
        # The consumer completes a group right after publishing it: ``completions`` are the results just published.
        # Keyed as the store answers: by claim key (the event's source and id).
        result_ids = {event_key(event): str(result.get("result_id", event.id)) for event, result in completions}
        if self.armed.crash_before_complete:
            self.armed.crash_before_complete = False
            with self.lock:
                self.counts.crashes_before_complete += 1
                self.counts.republishable.record(result_ids.values(), Cause.CRASH_BEFORE_COMPLETE)
            raise InjectedCrash(f"injected crash after publishing {len(completions)} results, before completing their claims")
        try:
            not_completed = self.inner.complete(completions)
        except BaseException:  # whatever stopped the completion, those results stay republishable
            with self.lock:
                self.counts.republishable.record(result_ids.values(), Cause.COMPLETION_NOT_WRITTEN)
            raise
        if not_completed:
            with self.lock:
                self.counts.republishable.record((result_ids[key] for key in not_completed),
                                                 Cause.COMPLETION_NOT_WRITTEN)
        if self.armed.crash_after_publish:
            self.armed.crash_after_publish = False
            with self.lock:
                self.counts.crashes_after_publish += 1
            raise InjectedCrash(f"injected crash after publishing and completing {len(completions)} results")
        return not_completed

    def release(self, events: Sequence[CloudEvent[Any]]) -> list[str]:
        return self.inner.release(events)

    def accept_once(self, event: CloudEvent[Any], *, owner: str) -> ClaimStatus:
        return self.inner.accept_once(event, owner=owner)

    def put_in_progress(self, records: Sequence[ClaimRecord], *, now_ms: int) -> list[PutAnswer]:
        return self.inner.put_in_progress(records, now_ms=now_ms)

    def put_completed(self, records: Sequence[ClaimRecord]) -> list[str]:
        return self.inner.put_completed(records)

    def delete(self, keys: Sequence[str]) -> list[str]:
        return self.inner.delete(keys)

    def put_accepted(self, record: ClaimRecord, *, now_ms: int) -> tuple[bool, ClaimRecord | None]:
        return self.inner.put_accepted(record, now_ms=now_ms)

    def end_hold(self, key: str, *, claimed_before_ms: int, now_ms: int) -> bool:
        return self.inner.end_hold(key, claimed_before_ms=claimed_before_ms, now_ms=now_ms)


Handler = Callable[[Any, Any], Any]


class FaultInjector:
    """One function's faults: wraps each of its execution environments (see the module).

    Parameters
    ----------
    rates
        The faults; ``None`` (or assigning ``None`` later) switches them off at once.
    seed
        Seeds the draws, for a repeatable experiment.

    Attributes
    ----------
    counts
        What was injected, and what the wrapped batches reported.
    """

    def __init__(self, rates: FaultRates | None, *, seed: int | None = None) -> None:
        self.rates = rates
        self.counts = FaultCounts()
        self.draws = _Draws(seed)
        # Every claims store it wrapped (one per execution environment), with its DynamoDB meter: what the claims cost.
        self.stores: list[tuple[ClaimStore, MeteredDynamoDB | None]] = []
        self._lock = threading.Lock()

    def _rate(self, name: str) -> float:
        rates = self.rates
        return float(getattr(rates, name)) if rates is not None else 0.0

    def wrap(self, handler: Handler) -> Handler:
        """``handler`` (one execution environment's) with its parts wrapped and its invocations drawn."""
        runtime = getattr(handler, "runtime", None)
        consumer = getattr(runtime, "consumer", None)
        armed = _Armed()
        if consumer is not None:
            self._wrap_consumer(runtime, consumer, armed)

        @functools.wraps(handler)
        def invoke(event: Any, context: Any) -> Any:
            with self._lock:
                self.counts.invocations += 1
            rates = self.rates
            # Disarm first: a fault drawn for an earlier invocation that never reached its moment
            # (a crash before completing, in a batch of duplicates) must not strike once the faults are off.
            armed.timeout_after_claim = armed.crash_after_publish = armed.crash_before_complete = False
            if rates is None:
                return handler(event, context)
            if rates.latency_ms:
                time.sleep(rates.latency_ms / 1000)
            if consumer is not None:
                armed.timeout_after_claim = self.draws(rates.timeout_rate)
                armed.crash_after_publish = self.draws(rates.crash_after_publish_rate)
                armed.crash_before_complete = self.draws(rates.crash_before_complete_rate)
            else:
                if self.draws(rates.step_error_rate):
                    with self._lock:
                        self.counts.step_errors += 1
                    raise TransientError(f"injected fault (step_error_rate={rates.step_error_rate})")
                if self.draws(rates.step_timeout_rate):
                    with self._lock:
                        self.counts.timeouts += 1
                    raise InjectedTimeout(f"injected timeout (step_timeout_rate={rates.step_timeout_rate})")
            return handler(event, context)

        return invoke

    def _wrap_consumer(self, runtime: Any, consumer: Any, armed: _Armed) -> None:
        store = consumer.claims
        claim_rate = functools.partial(self._rate, "claim_throttle_rate")
        complete_rate = functools.partial(self._rate, "complete_throttle_rate")
        if isinstance(store, DynamoDBClaimStore) and not isinstance(store.client, ThrottledDynamoDB):
            metered = MeteredDynamoDB(store.client)  # inside the throttling: a throttled request bills nothing
            self.stores.append((store, metered))
            store.client = ThrottledDynamoDB(metered, claim_rate=claim_rate, complete_rate=complete_rate, draws=self.draws)
        elif isinstance(store, RedisClaimStore) and not isinstance(store.client, UnreachableRedis):
            self.stores.append((store, None))
            store.client = UnreachableRedis(store.client, claim_sha=store.claim_sha, claim_rate=claim_rate,
                                            complete_rate=complete_rate, draws=self.draws)
        consumer.claims = FaultyClaimStore(store, armed, self.counts, self._lock)
        runtime.events = ThrottledEvents(runtime.events, functools.partial(self._rate, "put_events_throttle_rate"),
                                         self.draws)
        consumer.publish = self._publisher(consumer.publish, armed)
        consumer.infer = self._model(consumer.infer)
        consumer.process = self._tally(consumer.process)

    def _publisher(self, publish: Callable[[Sequence[dict[str, Any]]], list[PublishFailure]],
                   armed: _Armed) -> Callable[[Sequence[dict[str, Any]]], list[PublishFailure]]:
        def publish_half_before_a_crash(entries: Sequence[dict[str, Any]]) -> list[PublishFailure]:
            if not armed.crash_after_publish:
                return publish(entries)
            # The process dies once this group's first half is published and completed (FaultyClaimStore.complete):
            # the second half is never sent; its claims stay in progress until they expire.
            half = len(entries) // 2
            failures = publish(entries[:half]) if half else []
            return failures + [PublishFailure(index, "InjectedCrash", "never sent: the process died")
                               for index in range(half, len(entries))]

        return publish_half_before_a_crash

    def _model(self, infer: Callable[[Sequence[CloudEvent[Any]]], Sequence[EventData | Exception]]
               ) -> Callable[[Sequence[CloudEvent[Any]]], Sequence[EventData | Exception]]:
        def infer_with_record_errors(events: Sequence[CloudEvent[Any]]) -> Sequence[EventData | Exception]:
            rate = self._rate("record_error_rate")
            failing = {index for index in range(len(events)) if self.draws(rate)}
            if not failing:
                return infer(events)
            with self._lock:
                self.counts.record_errors += len(failing)
            kept = [event for index, event in enumerate(events) if index not in failing]
            scored = iter(infer(kept) if kept else [])
            return [TransientError(f"injected fault (record_error_rate={rate})") if index in failing else next(scored)
                    for index in range(len(events))]

        return infer_with_record_errors

    def _tally(self, process: Callable[..., BatchReport]) -> Callable[..., BatchReport]:
        def process_and_count(*args: Any, **kwargs: Any) -> BatchReport:
            report = process(*args, **kwargs)
            with self._lock:
                self.counts.records_failed_by_claim_throttling += report.claims_unavailable
                self.counts.duplicates_skipped += report.count(RecordStatus.DUPLICATE)
            return report

        return process_and_count


def inject_faults(function: LocalFunction, rates: FaultRates | None, *, seed: int | None = None) -> FaultInjector:
    """Wrap every execution environment of ``function`` (those warm now and those to come) with a
    :class:`FaultInjector` at ``rates``; return it (switch it off with ``injector.rates = None``)."""
    injector = FaultInjector(rates, seed=seed)
    function.add_handler_wrapper(injector.wrap)
    return injector
