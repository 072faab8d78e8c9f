"""An EventBridge schema registry with the JSON Schema of every event type, for producers in any language.

The schemas are generated from the contracts (``inferbus schemas``, the same as in
``docs/schemas/``) and registered in JSON Schema draft 4, the dialect the registry takes;
download code bindings for them from the EventBridge console or ``aws schemas``.

Secure defaults
---------------
- The registry holds descriptions only (no data); reading it needs IAM permissions of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aws_cdk import aws_eventschemas as eventschemas
from constructs import Construct

SCHEMA_TYPE = "JSONSchemaDraft4"


class EventSchemaRegistry(Construct):
    """Parameters
    ----------
    registry_name
        The registry's name.
    schemas
        Each event type's schema, already in draft 4, by type (the schema's name).
    """

    def __init__(self, scope: Construct, construct_id: str, *, registry_name: str,
                 schemas: Mapping[str, dict[str, Any]]) -> None:
        super().__init__(scope, construct_id)
        self.registry = eventschemas.CfnRegistry(self, "Registry", registry_name=registry_name,
                                                 description="inferbus event types: the CloudEvent of each, "
                                                 "generated from the contracts")
        self.schemas = {
            event_type: eventschemas.CfnSchema(
                self, f"{event_type}Schema",
                registry_name=self.registry.attr_registry_name,
                schema_name=event_type,
                type=SCHEMA_TYPE,
                content=json.dumps(schema, separators=(",", ":")),
                description=str(schema.get("description", event_type))[:256],
            )
            for event_type, schema in schemas.items()
        }
