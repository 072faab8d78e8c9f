"""The JSON Schemas in docs/schemas/ are generated from the contracts, current, and say what the contracts say."""

from __future__ import annotations

import json

import jsonschema
import pytest

from inferbus.demo.inputs import demo_components, input_type, sample_events
from inferbus.model.schemas import SCHEMA_DIR, draft4, event_schemas, stale_schemas
from tests.declared import DEMO, PIPELINE

SCHEMAS = event_schemas()


def test_every_event_type_has_a_current_schema_file():
    assert not stale_schemas(SCHEMAS), "run `inferbus schemas --write`"
    assert {path.stem for path in SCHEMA_DIR.glob("*.json")} == set(SCHEMAS)


@pytest.mark.parametrize("component", demo_components(PIPELINE), ids=lambda c: c.name)
def test_a_valid_event_passes_its_schema_and_a_broken_one_does_not(component):
    schema = SCHEMAS[input_type(component)]
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    ((event, _),) = sample_events(component, 1)
    document = json.loads(event.model_dump_json(exclude_none=True))
    validator.validate(document)
    for corruption in DEMO[component.name].malformed:
        broken = json.loads(json.dumps(document))
        corruption.change(broken)
        if corruption.why in ("blank text", "a pixel short of width x height"):  # rules the contract checks in code, not the schema
            continue
        assert not validator.is_valid(broken), corruption.why
    assert not validator.is_valid(dict(document, type="SomethingElse"))


@pytest.mark.parametrize("event_type", sorted(SCHEMAS))
def test_the_registry_form_is_valid_draft_4(event_type):
    converted = draft4(SCHEMAS[event_type])
    jsonschema.Draft4Validator.check_schema(converted)
    assert "$defs" not in json.dumps(converted) and "const" not in json.dumps(converted)
