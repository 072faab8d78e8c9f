"""inferbus's domain model: the declarations of a pipeline, the names derived from them, the settings,
the event schemas and the ASL helpers.

It imports only the Lambda package's contracts; the CDK app (``infra``), the embedded runtime and
the CLI import it. Imports run one way: Lambda package <- model <- infra <- runtime and CLI.

Example
-------
>>> from inferbus.model import Consumer, EventFilter
>>> Consumer(name="iris-classifier", handler="iris.handler.lambda_handler",
...          accepts=EventFilter("IrisSubmitted"), emits="IrisClassified").result_type
'IrisClassified'
"""

from .declarations import (
    Component,
    Consumer,
    DeclarationError,
    EventFilter,
    Pipeline,
    Producer,
    ResultProducer,
    Route,
    Setting,
    StateTable,
    Task,
    Workflow,
)
from .demo import Corruption, DemoInputs, Sample
from .settings import ConsumerSettings, FunctionSettings, InferbusSettings, QueueSettings, SettingsError

__all__ = [
    "Component", "Consumer", "ConsumerSettings", "Corruption", "DeclarationError", "DemoInputs", "EventFilter",
    "FunctionSettings", "InferbusSettings", "Pipeline", "Producer", "QueueSettings", "ResultProducer", "Route", "Sample",
    "Setting", "SettingsError", "StateTable", "Task", "Workflow",
]
