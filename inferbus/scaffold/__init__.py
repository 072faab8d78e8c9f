"""The scaffold: ``inferbus new consumer`` and ``inferbus new workflow`` write a new component;
``inferbus models add`` records a model (:mod:`.models_add`).

One module per step: :mod:`.graph` reads an ONNX graph, :mod:`.samples` reads held-out
samples, :mod:`.codegen` writes a consumer's source, :mod:`.consumer` and :mod:`.workflow`
carry out each command, :mod:`.project` knows the repository's layout and writes files all
or nothing. Every error is a :class:`ScaffoldError` whose message says what to do.

Example
-------
>>> from inferbus.scaffold import new_consumer
>>> written = new_consumer("iris-classifier", Path("iris.onnx"), "IrisSubmitted")  # doctest: +SKIP
>>> print(*written.next_steps, sep="\\n")  # doctest: +SKIP
"""

from .consumer import new_consumer
from .errors import ScaffoldError
from .graph import GraphSpec, open_session, read_graph, read_inputs
from .models_add import AddedModel, add_model, parse_scores
from .project import Project, Written
from .workflow import new_workflow

__all__ = ["AddedModel", "GraphSpec", "Project", "ScaffoldError", "Written", "add_model", "new_consumer", "new_workflow",
           "open_session", "parse_scores", "read_graph", "read_inputs"]
