"""The scaffold: ``inferbus new consumer`` and ``inferbus new workflow`` write a new component.

One module per step: :mod:`.graph` reads an ONNX graph, :mod:`.samples` reads held-out
samples, :mod:`.names` derives names. Every error is a :class:`ScaffoldError` whose message
says what to do.
"""

from .errors import ScaffoldError
from .graph import GraphSpec, open_session, read_graph, read_inputs

__all__ = ["GraphSpec", "ScaffoldError", "open_session", "read_graph", "read_inputs"]
