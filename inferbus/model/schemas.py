"""JSON Schema of every event type, generated from the contracts: ``docs/schemas/<Type>.json``.

Each schema describes the whole CloudEvent a producer puts on the bus (the ``Detail`` of the
PutEvents entry): the envelope with inferbus's ``correlationid`` and that type's ``data``. They are
generated from the same pydantic models the consumers validate with, never written by hand;
``inferbus schemas --write`` rewrites the folder and ``inferbus schemas --check`` (run by the
tests) fails when it is stale. The stack registers the same schemas, in JSON Schema draft 4
(:func:`draft4`), in an EventBridge schema registry, where code bindings for other languages
can be downloaded.

Example
-------
>>> schema = event_schema("TextSubmitted")
>>> schema["title"], sorted(schema["required"])[:3]
('TextSubmitted', ['correlationid', 'data', 'id'])
>>> draft4({"exclusiveMinimum": 0, "$ref": "#/$defs/Customer", "const": "1.0"})
{'minimum': 0, 'exclusiveMinimum': True, '$ref': '#/definitions/Customer', 'enum': ['1.0']}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inferbus_lambda.contracts import EVENT_DATA_MODELS, envelope_model, known_event_types

__all__ = ["SCHEMA_DIR", "draft4", "event_schema", "event_schemas", "render", "stale_schemas", "write_schemas"]

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "docs" / "schemas"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
DRAFT_4 = "http://json-schema.org/draft-04/schema#"
SCHEMA_ID = "urn:inferbus:event:{type}"


def event_schema(event_type: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a whole CloudEvent of ``event_type``."""
    generated = envelope_model(event_type).model_json_schema()
    description = (EVENT_DATA_MODELS[event_type].__doc__ or "").strip().split("\n\n")[0]
    # The envelope takes any type; this schema is of one.
    generated["properties"]["type"] = {"const": event_type, "title": "Type", "type": "string"}
    return {
        "$schema": DRAFT_2020_12,
        "$id": SCHEMA_ID.format(type=event_type),
        "title": event_type,
        "description": " ".join(f"A CloudEvent of type {event_type}. {description}".split()),
        **{key: value for key, value in generated.items() if key not in ("title", "description")},
    }


def event_schemas() -> dict[str, dict[str, Any]]:
    """Every registered event type's schema, by type."""
    return {event_type: event_schema(event_type) for event_type in known_event_types()}


def render(schema: dict[str, Any]) -> str:
    """A schema as its file holds it."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def stale_schemas(schemas: dict[str, dict[str, Any]], folder: Path = SCHEMA_DIR) -> list[str]:
    """The files of ``folder`` that differ from ``schemas`` (missing, changed, or of no type any more)."""
    present = {path.stem for path in folder.glob("*.json")} if folder.is_dir() else set()
    changed = [name for name, schema in schemas.items()
               if name not in present or (folder / f"{name}.json").read_text() != render(schema)]
    return sorted(changed + sorted(present - set(schemas)))


def write_schemas(schemas: dict[str, dict[str, Any]], folder: Path = SCHEMA_DIR) -> None:
    """Write one file per schema and remove the files of types that no longer exist."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas.items():
        (folder / f"{name}.json").write_text(render(schema))
    for path in folder.glob("*.json"):
        if path.stem not in schemas:
            path.unlink()


def draft4(schema: Any) -> Any:
    """``schema`` in JSON Schema draft 4, the dialect EventBridge's schema registry takes.

    ``$defs`` becomes ``definitions``, a numeric ``exclusiveMinimum``/``exclusiveMaximum`` becomes a
    bound with the boolean flag, ``const`` becomes a one-value ``enum``.
    """
    if isinstance(schema, list):
        return [draft4(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$defs":
            converted["definitions"] = {name: draft4(item) for name, item in value.items()}
        elif key == "$ref" and isinstance(value, str):
            converted["$ref"] = value.replace("#/$defs/", "#/definitions/")
        elif key == "$schema":
            converted["$schema"] = DRAFT_4
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            converted["minimum" if key == "exclusiveMinimum" else "maximum"] = value
            converted[key] = True
        elif key == "const":
            converted["enum"] = [value]
        elif key in ("properties", "patternProperties"):
            converted[key] = {name: draft4(item) for name, item in value.items()}
        else:
            converted[key] = draft4(value)
    return converted
