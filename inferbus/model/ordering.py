"""Did an ordered consumer keep each key's order? The check the demo's and chaos's ledgers run.

An ordered consumer (``channel="fifo"``) must publish the results of one key (its ``group_by``)
in the order the key's events were sent. Given the events as sent (PutEvents entries, in send
order) and the subjects of its results as the bus carried them (the first result of each input),
:func:`order_breaks` counts the results published ahead of an earlier-sent event of their key.
Events without a result (rejected, dead-lettered) are skipped: a key moves on past a
dead-lettered event, in AWS as here.

Example
-------
>>> def entry(event_id, key):
...     return {"Source": "shop", "DetailType": "OrderPlaced",
...             "Detail": json.dumps({"id": event_id, "data": {"customer": key}})}
>>> sent = [entry("a1", "a"), entry("b1", "b"), entry("a2", "a"), entry("b2", "b")]
>>> order_breaks("$.detail.data.customer", sent, ["b1", "a1", "b2", "a2"])
0
>>> order_breaks("$.detail.data.customer", sent, ["a2", "a1", "b1", "b2"])
1
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["key_of", "order_breaks", "order_breaks_by"]


def key_of(group_by: str, entry: Mapping[str, Any]) -> str | None:
    """The key ``group_by`` (``$.detail.<field>...``) reads in a PutEvents entry, as EventBridge delivers it;
    ``None`` when the path reads nothing."""
    try:
        value: Any = {"source": entry.get("Source"), "detail-type": entry.get("DetailType"),
                      "detail": json.loads(entry.get("Detail", "null"))}
    except ValueError:
        return None
    for field in group_by.split(".")[1:]:
        value = value.get(field) if isinstance(value, dict) else None
    return None if value is None or isinstance(value, dict | list) else str(value)


def order_breaks(group_by: str, sent: Sequence[Mapping[str, Any]], published: Iterable[str]) -> int:
    """How many results came out ahead of an earlier-sent event of the same key.

    Parameters
    ----------
    group_by
        The consumer's key.
    sent
        The PutEvents entries sent to it, in send order (a re-sent event counts where first sent).
    published
        The input ids of its results (their ``subject``), in the order the bus carried them; an id
        seen before (a repeated result) and an id it was not sent are ignored.
    """
    keyed = []
    for entry in sent:
        try:
            event_id = json.loads(entry.get("Detail", "null"))["id"]
        except (ValueError, TypeError, KeyError):
            continue
        keyed.append((str(event_id), key_of(group_by, entry)))
    return order_breaks_by(keyed, published)


def order_breaks_by(sent: Iterable[tuple[str, str | None]], published: Iterable[str]) -> int:
    """:func:`order_breaks` for keys known otherwise (a Kafka record's partition, from where it was written).

    Parameters
    ----------
    sent
        ``(event id, key)`` in send order (a re-sent event counts where first sent).
    published
        As :func:`order_breaks`'s.

    Example
    -------
    >>> order_breaks_by([("a1", "p0"), ("b1", "p1"), ("a2", "p0")], ["a2", "b1", "a1"])
    1
    """
    position: dict[str, tuple[str | None, int]] = {}
    for index, (event_id, key) in enumerate(sent):
        position.setdefault(event_id, (key, index))
    latest: dict[str | None, int] = {}
    breaks, seen = 0, set()
    for subject in published:
        if subject in seen or subject not in position:
            continue
        seen.add(subject)
        key, index = position[subject]
        if index < latest.get(key, -1):
            breaks += 1
        latest[key] = max(index, latest.get(key, -1))
    return breaks
