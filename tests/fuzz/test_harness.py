"""The fuzz harness gives a consumer the state tables it declares, as the embedded runtime does.

A consumer that reads a table (``reads=``) finds it by name through ``runtime.state(...)``; without
the table the harness's batches failed as a whole (no record got its outcome). Every case here is
derived from the declarations: any consumer with ``reads`` is covered.
"""

from __future__ import annotations

import dataclasses

import pytest

from inferbus.model.declarations import StateTable
from inferbus.state_seed import REPO_ROOT, read_seed
from tests.declared import PIPELINE
from tests.fuzz.harness import MemoryConsumer

READERS = [consumer for consumer in PIPELINE.consumers if consumer.reads]


def test_the_shipped_pipeline_has_a_consumer_that_reads_a_state_table() -> None:
    assert READERS, "no declared consumer reads a state table: the cases below would test nothing"


@pytest.mark.parametrize("declaration", READERS, ids=lambda c: c.name)
def test_a_consumer_reads_each_declared_table_with_its_seed(declaration) -> None:
    consumer = MemoryConsumer(declaration)
    for table in declaration.reads:
        items = read_seed(REPO_ROOT / table.seed) if table.seed else []
        assert consumer.seeded.get(table.name, 0) == len(items)
        answers = consumer.runtime.state(table.name).get_many([item["id"] for item in items] + ["no-such-id"])
        assert answers.pop("no-such-id") is None
        assert {key: set(item) for key, item in answers.items()} == {item["id"]: set(item) for item in items}


@pytest.mark.parametrize("declaration", READERS, ids=lambda c: c.name)
def test_a_table_declared_without_a_seed_is_there_and_empty(declaration) -> None:
    unseeded = tuple(StateTable(table.name, cache_s=table.cache_s) for table in declaration.reads)
    consumer = MemoryConsumer(dataclasses.replace(declaration, reads=unseeded))
    for table, original in zip(unseeded, declaration.reads, strict=True):
        ids = [item["id"] for item in read_seed(REPO_ROOT / original.seed)] if original.seed else ["any-id"]
        assert set(consumer.runtime.state(table.name).get_many(ids).values()) == {None}
