"""State tables: declared once per name, read by the consumers that declare them, seeded from JSON Lines."""

from __future__ import annotations

import json

import pytest

from inferbus.model.declarations import Consumer, DeclarationError, EventFilter, Pipeline, StateTable
from inferbus.state_seed import SeedError, read_seed
from tests.declared import PIPELINE


def consumer(name="iris-recommender", **changes):
    fields = {"handler": "iris.handler.lambda_handler", "accepts": EventFilter("IrisSubmitted"), "emits": "IrisRecommended"}
    return Consumer(name=name, **fields | changes)


def test_names_derive_from_the_table_name_and_one_table_may_be_written_bare():
    table = StateTable("store-features", seed="data/features.jsonl", cache_s=0)
    assert (table.construct_id, table.output_key) == ("StoreFeaturesStateTable", "StoreFeaturesStateTableName")
    assert consumer(reads=table).reads == (table,)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: StateTable("Profiles"), "must be kebab-case"),
    (lambda: StateTable("profiles", cache_s=-1), "cache_s must be whole seconds from 0 to 86400"),
    (lambda: StateTable("profiles", cache_s=1.5), "cache_s must be whole seconds"),
    (lambda: StateTable("profiles", seed="profiles.csv"), r"seed must be a \.jsonl file"),
    (lambda: consumer(reads=("profiles",)), "reads must be StateTable declarations"),
    (lambda: consumer(reads=(StateTable("a"), StateTable("a"))), "names a state table more than once"),
    (lambda: Pipeline((consumer(reads=(StateTable("a", cache_s=5),)), consumer("other", reads=(StateTable("a"),)))),
     "^other: state table 'a' is declared differently by two consumers"),
])
def test_a_state_table_that_cannot_work_is_refused_naming_it(make, message):
    with pytest.raises(DeclarationError, match=message):
        make()


def test_the_pipeline_lists_each_table_once_however_many_consumers_read_it():
    shared, own = StateTable("profiles", seed="p.jsonl"), StateTable("prices")
    pipeline = Pipeline((consumer("a", reads=(shared,)), consumer("b", reads=(own, shared)), consumer("c")))
    assert pipeline.state_tables == (shared, own)


def test_every_declared_seed_reads_as_items_with_unique_ids():
    from inferbus.state_seed import REPO_ROOT

    for table in PIPELINE.state_tables:
        if table.seed:
            items = read_seed(REPO_ROOT / table.seed)
            assert items and len({item["id"] for item in items}) == len(items)


@pytest.mark.parametrize(("lines", "message"), [
    (['{"id": "a"}', "not json"], r":2: not JSON"),
    (['{"name": "a"}'], r":1: each line must be a JSON object with a non-empty string 'id'"),
    (['{"id": 7}'], r":1: each line must be a JSON object"),
    (['["id"]'], r":1: each line must be a JSON object"),
    (['{"id": "a"}', "", '{"id": "a"}'], r":3: id 'a' appears twice"),
])
def test_a_bad_seed_is_refused_naming_its_line(tmp_path, lines, message):
    path = tmp_path / "seed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SeedError, match=message):
        read_seed(path)


def test_a_missing_seed_file_is_named(tmp_path):
    with pytest.raises(SeedError, match="no such seed file"):
        read_seed(tmp_path / "absent.jsonl")


def test_seed_numbers_keep_their_decimal_value(tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_text(json.dumps({"id": "a", "weight": 0.1, "count": 3}) + "\n")
    (item,) = read_seed(path)
    assert str(item["weight"]) == "0.1" and item["count"] == 3
