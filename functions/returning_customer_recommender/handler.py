"""``TransactionApproved`` for returning customers in, ``Recommended`` out: ONE EASE ``session.run`` per batch.

The customer's history is read from the ``customer-profiles`` state table (one
``BatchGetItem`` per batch for the customers not cached in this container). A customer the
table has no history for gets the most popular movies (``basis: popularity``): the graph adds
a popularity tie-breaker to every score, which alone ranks an empty history.
"""

from __future__ import annotations

from collections.abc import Sequence

from inferbus_lambda.contracts import CloudEvent, Recommended, TransactionApproved
from inferbus_lambda.handlers import ConsumerRuntime, consumer_handler
from inferbus_lambda.recommend import PROFILES, history_matrix, recommendations


def recommend_from_history(events: Sequence[CloudEvent[TransactionApproved]], runtime: ConsumerRuntime) -> list[Recommended]:
    """Recommend for every customer of the batch in ONE run of the history model."""
    model = runtime.models.only
    profiles = runtime.state(PROFILES).get_many(event.data.customer.id for event in events)
    history = history_matrix([profiles[event.data.customer.id] for event in events],
                             int(model.metadata["inputs"][0]["shape"][1]))
    known = history.any(axis=1)
    batch = model.run({"history": history})
    return [
        Recommended(
            input_id=event.id,
            customer=event.data.customer,
            items=recommendations(batch["items"][row], batch["scores"][row]),
            basis="history" if known[row] else "popularity",
            model=model.ref,
            inference_ms=round(batch.inference_ms, 3),
            batch_size=len(events),
        )
        for row, event in enumerate(events)
    ]


lambda_handler = consumer_handler(recommend_from_history)
