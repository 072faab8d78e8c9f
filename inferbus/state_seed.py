"""Fill a state table (``StateTable(..., seed="file.jsonl")``) with its seed items.

The embedded runtime seeds every declared table as it starts (``LocalPipeline``); against a
deployed stack, ``inferbus seed NAME --table <stack output <Name>StateTableName>`` does it.
A seed is JSON Lines: one object per line, each with a string ``id`` (the table's key).
Writing an item replaces the one with its id, so seeding twice leaves the same table.

Example
-------
>>> items = read_seed(Path("models/recs-customers.jsonl"))  # doctest: +SKIP
>>> seed_table(dynamodb, "CustomerProfilesTable", items)  # doctest: +SKIP
17
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from inferbus.model.declarations import StateTable

__all__ = ["BATCH_WRITE_LIMIT", "REPO_ROOT", "SeedError", "read_seed", "seed_table", "seed_tables"]

REPO_ROOT = Path(__file__).resolve().parents[1]  # where a StateTable's seed path starts
BATCH_WRITE_LIMIT = 25  # items per BatchWriteItem (DynamoDB's limit)
ATTEMPTS = 8


class SeedError(ValueError):
    """A seed that cannot be written; the message names the file and line, or the table."""


def read_seed(path: Path) -> list[dict[str, Any]]:
    """The items of a JSON Lines seed file (blank lines skipped).

    Raises
    ------
    SeedError
        For a missing file, a line that is not a JSON object with a non-empty string ``id``, or an id twice.
    """
    if not path.is_file():
        raise SeedError(f"{path}: no such seed file (a StateTable's seed is relative to the repository root)")
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line, parse_float=Decimal)  # DynamoDB numbers are Decimals, never binary floats
        except ValueError as error:
            raise SeedError(f"{path}:{number}: not JSON ({error.args[0]})") from None
        key = item.get(StateTable.KEY) if isinstance(item, dict) else None
        if not (isinstance(key, str) and key):
            raise SeedError(f"{path}:{number}: each line must be a JSON object with a non-empty string {StateTable.KEY!r}")
        if key in seen:
            raise SeedError(f"{path}:{number}: {StateTable.KEY} {key!r} appears twice")
        seen.add(key)
        items.append(item)
    return items


def seed_table(client: Any, table: str, items: Sequence[Mapping[str, Any]]) -> int:
    """Put ``items`` into ``table`` (25 per ``BatchWriteItem``, retrying what DynamoDB leaves unprocessed).

    Returns
    -------
    int
        How many items were written.

    Raises
    ------
    SeedError
        When DynamoDB still leaves items unwritten after several attempts.
    """
    from boto3.dynamodb.types import TypeSerializer

    serialize = TypeSerializer().serialize
    for start in range(0, len(items), BATCH_WRITE_LIMIT):
        request = {table: [{"PutRequest": {"Item": {name: serialize(value) for name, value in item.items()}}}
                           for item in items[start:start + BATCH_WRITE_LIMIT]]}
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(min(0.05 * 2 ** attempt, 2.0))
            request = client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
            if not request:
                break
        else:
            raise SeedError(f"{table}: DynamoDB left items unwritten after {ATTEMPTS} attempts; run the seed again")
    return len(items)


def seed_tables(client: Any, tables: Iterable[StateTable], table_names: Mapping[str, str], root: Path) -> dict[str, int]:
    """Seed each of ``tables`` that declares a seed (a pipeline's ``state_tables``, or one consumer's ``reads``);
    ``table_names``: declared name -> physical name. Returns declared name -> items written."""
    return {table.name: seed_table(client, table_names[table.name], read_seed(root / table.seed))
            for table in tables if table.seed}
