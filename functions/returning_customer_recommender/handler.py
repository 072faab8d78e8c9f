"""``TransactionApproved`` for returning customers in, ``Recommended`` out: ONE EASE ``session.run`` per batch.

The customer's history is read from the ``customer-profiles`` state table (one
``BatchGetItem`` per batch for the customers not cached in this container). A customer the
table has no history for gets the most popular movies (``basis: popularity``) from the
popularity model's last row, in the same batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from inferbus_lambda.contracts import CloudEvent, Recommended, TransactionApproved
from inferbus_lambda.handlers import ConsumerRuntime, consumer_handler
from inferbus_lambda.recommend import PROFILES, history_matrix, recommendations

HISTORY_MODEL, FALLBACK_MODEL = "recs-ease", "recs-popular"


def recommend_from_history(events: Sequence[CloudEvent[TransactionApproved]], runtime: ConsumerRuntime) -> list[Recommended]:
    """Recommend for every customer of the batch in ONE run of the history model (and one of the fallback)."""
    model, fallback = runtime.models[HISTORY_MODEL], runtime.models[FALLBACK_MODEL]
    profiles = runtime.state(PROFILES).get_many(event.data.customer.id for event in events)
    history = history_matrix([profiles[event.data.customer.id] for event in events],
                             int(model.metadata["inputs"][0]["shape"][1]))
    known = history.any(axis=1)
    batch = model.run({"history": history})
    unknown = fallback.run({"segment": np.full(len(events), -1, dtype=np.int64)})  # the last row: everyone
    return [
        Recommended(
            input_id=event.id,
            customer=event.data.customer,
            items=recommendations(*((batch["items"][row], batch["scores"][row]) if known[row]
                                    else (unknown["items"][row], unknown["scores"][row]))),
            basis="history" if known[row] else "popularity",
            model=model.ref if known[row] else fallback.ref,
            inference_ms=round(batch.inference_ms + unknown.inference_ms, 3),
            batch_size=len(events),
        )
        for row, event in enumerate(events)
    ]


lambda_handler = consumer_handler(recommend_from_history)
