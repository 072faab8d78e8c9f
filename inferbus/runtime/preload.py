"""Import the twin's slowest modules on a thread while Node synthesizes the app.

A start of the twin (``inferbus demo``, ``serve``, ``invoke``, ``chaos``) first synthesizes the CDK
app, then provisions the template on moto. The synth spends about two thirds of its time waiting
for Node (jsii), with Python's interpreter free; provisioning then imports close to a thousand
modules, and a few of them take most of that time: moto's Amazon States Language parser alone
(``asl_parser``: ANTLR builds its tables as it is imported) about a second on 2 cores. Importing
those while the synth waits takes them off the start's path. Nothing else changes: the same
modules are imported, only sooner, and a function's own handler is still imported at its cold
start, as in Lambda.

Examples
--------
>>> thread = preload_in_background(names=("json",))
>>> thread.join(timeout=10)
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence

# The slowest of what a start imports after the synth, measured with ``python -X importtime``
# (tests/functional/test_runtime_preload.py checks that a start imports each of them).
PRELOADED = (
    "moto",
    "moto.stepfunctions.parser.asl.parse.asl_parser",
    "moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils",
    "moto.dynamodb.models",
    "moto.sqs.models",
    "moto.events.models",
    "onnxruntime",
    "tokenizers",
    "aws_lambda_powertools.event_handler",
)


def _import_each(names: Sequence[str]) -> None:
    from .moto_patches import load_batch_utils_alone

    load_batch_utils_alone()  # else the Step Functions parser's import pulls in moto.ec2 (1.2 s)
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: S112 - the start imports it again, and that one says what is wrong
            continue


def preload_in_background(names: Sequence[str] = PRELOADED) -> threading.Thread:
    """Start importing ``names`` on a daemon thread and return it (nobody needs to wait for it)."""
    thread = threading.Thread(target=_import_each, args=(tuple(names),), name="inferbus-preload", daemon=True)
    thread.start()
    return thread
