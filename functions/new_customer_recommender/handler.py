"""``TransactionApproved`` for new customers in, ``Recommended`` out: ONE popularity ``session.run`` per batch.

A new customer has no history: their age and gender, read from the ``customer-profiles``
state table, choose a demographic segment, whose most popular movies they get. A customer
the table does not know gets the popularity among everyone (``basis: popularity``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from inferbus_lambda.contracts import CloudEvent, Recommended, TransactionApproved
from inferbus_lambda.handlers import ConsumerRuntime, consumer_handler
from inferbus_lambda.recommend import PROFILES, recommendations, segment_row


def recommend_for_segment(events: Sequence[CloudEvent[TransactionApproved]], runtime: ConsumerRuntime) -> list[Recommended]:
    """Recommend for every customer of the batch in ONE run of the segment popularity model."""
    model = runtime.models.only
    segments = model.metadata["segments"]
    unknown = len(segments["age_bands"]) * len(segments["genders"])
    profiles = runtime.state(PROFILES).get_many(event.data.customer.id for event in events)
    rows = np.array([segment_row(profiles[event.data.customer.id], segments) for event in events], dtype=np.int64)
    batch = model.run({"segment": rows})
    return [
        Recommended(
            input_id=event.id,
            customer=event.data.customer,
            items=recommendations(batch["items"][row], batch["scores"][row]),
            basis="popularity" if rows[row] == unknown else "segment",
            model=model.ref,
            inference_ms=round(batch.inference_ms, 3),
            batch_size=len(events),
        )
        for row, event in enumerate(events)
    ]


lambda_handler = consumer_handler(recommend_for_segment)
