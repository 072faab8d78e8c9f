"""Garbage collection held off while a Lambda container initialises, then the init's objects frozen.

A cold init allocates hundreds of thousands of objects (botocore's service models, pydantic's
schemas, onnxruntime's bindings) and keeps nearly all of them for the container's life. Python's
collector does not know that: each time enough objects pile up it walks the whole heap looking
for cycles, and after the clients are made one full walk costs about 20 ms of CPU
(``bench/speed.py --cold``), for nothing. So, in Lambda only (``AWS_LAMBDA_RUNTIME_API`` is set
by its runtime, never by the local twin, the CLI or the tests), the kit turns the collector off
at its first import (``inferbus_lambda/__init__.py``), and the first invocation of a handler it
made (:meth:`~.handlers.FunctionRuntime.wrap`) moves everything the init made to the permanent
generation (:func:`gc.freeze`) and turns it back on. A Lambda function of your own that imports
the kit (its contracts, say) but makes no handler with it calls :func:`release_collection` at the
end of its init itself. Collections during the
invocations then walk only what the invocations allocate. What the init left as cyclic garbage
(a few MB) is frozen with the rest, as the standard library's documentation of ``gc.freeze``
describes for a pre-forking server.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping

__all__ = ["hold_collection", "in_lambda_runtime", "release_collection"]

_held = False


def in_lambda_runtime(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process is a Lambda runtime's (its Runtime API address is set)."""
    return "AWS_LAMBDA_RUNTIME_API" in (os.environ if environ is None else environ)


def hold_collection() -> None:
    """Turn the collector off for the rest of the init, in Lambda only (and if it was on)."""
    global _held
    if in_lambda_runtime() and gc.isenabled() and not _held:
        gc.disable()
        _held = True


def release_collection() -> None:
    """The init is over: freeze what it made and turn the collector back on (once; a no-op otherwise)."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
