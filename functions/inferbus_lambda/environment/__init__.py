"""Each function's environment, as a typed model: the one definition of every variable's name.

The CDK stack builds a function's ``Environment`` from these models and the function
validates its own at init (:meth:`FunctionEnvironment.from_environ`), so a variable cannot
be renamed on one side only, and a missing or malformed one stops the cold start with a
message that names it instead of a ``KeyError`` deep in a handler.

=========================  ====================================================================
model                      the functions that read it
=========================  ====================================================================
:class:`StepEnvironment`   workflow steps (``inferbus_lambda.handlers.step_handler``)
:class:`AcceptEnvironment` the workflows' shared first step (it claims event ids)
:class:`ConsumerEnvironment`  queue consumers (``inferbus_lambda.handlers.consumer_handler``)
:class:`IngestEnvironment` the HTTP ingest endpoint (``functions/ingest``)
:class:`UnroutedEnvironment`  the bus's unrouted-events check (``functions/unrouted_events``)
=========================  ====================================================================

:class:`FunctionEnvironment` and :class:`StepEnvironment` are in :mod:`.base`, the models of the
functions that claim event ids in :mod:`.claims`, those of the bus's own functions in :mod:`.bus`.

Example
-------
>>> env = StepEnvironment.from_environ({"POWERTOOLS_SERVICE_NAME": "text-pipeline-embed",
...                                     "POWERTOOLS_METRICS_NAMESPACE": "Inferbus", "INFERBUS_MODELS": "minilm-l6-int8"})
>>> env.INFERBUS_MODELS
('minilm-l6-int8',)
>>> StepEnvironment.from_environ({"POWERTOOLS_SERVICE_NAME": "x"})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
inferbus_lambda.errors.ConfigurationError: x: the function's environment is incomplete or wrong ...
"""

from typing import TYPE_CHECKING

from ..lazy import import_on_first_use
from .base import FunctionEnvironment, StepEnvironment, variable

if TYPE_CHECKING:  # for type checkers; at run time each module is imported on first use
    from .bus import ExecutionFailuresEnvironment, IngestEnvironment, UnroutedEnvironment
    from .claims import AcceptEnvironment, ClaimsEnvironment, ConsumerEnvironment

# Which module defines each of the other models: a function makes only its own (each frozen dataclass
# costs a cold init about a millisecond to make, a consumer's twenty variables more), e.g. a workflow
# step never makes ConsumerEnvironment.
_MODULE_OF = {
    "AcceptEnvironment": "claims", "ClaimsEnvironment": "claims", "ConsumerEnvironment": "claims",
    "ExecutionFailuresEnvironment": "bus", "IngestEnvironment": "bus", "UnroutedEnvironment": "bus",
}


__getattr__ = import_on_first_use(__name__, _MODULE_OF, globals())  # a model of .claims or .bus, imported on first use


__all__ = ["AcceptEnvironment", "ClaimsEnvironment", "ConsumerEnvironment", "ExecutionFailuresEnvironment",
           "FunctionEnvironment", "IngestEnvironment", "StepEnvironment", "UnroutedEnvironment"]
