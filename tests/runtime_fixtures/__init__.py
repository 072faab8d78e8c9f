"""Small handlers and template builders for the embedded runtime's own tests.

The handlers are imported by the runtime from the template's ``Handler`` property
(``tests.runtime_fixtures.<module>.handler``), as the real ones are from ``functions/``.
"""

from __future__ import annotations

import json
import os
import time


def log(message: str, **fields: object) -> None:
    """One JSON log line on stdout, as Powertools' Logger writes it."""
    print(json.dumps({"level": "INFO", "message": message, "tag": os.environ.get("TAG"), **fields}))


def metric(name: str, value: float) -> None:
    """One EMF line on stdout, as Powertools' Metrics flushes it."""
    print(json.dumps({
        "_aws": {"Timestamp": int(time.time() * 1000),
                 "CloudWatchMetrics": [{"Namespace": "RuntimeTest", "Dimensions": [["service"]],
                                        "Metrics": [{"Name": name, "Unit": "Count"}]}]},
        "service": os.environ.get("TAG", "test"),
        name: [value],
    }))
