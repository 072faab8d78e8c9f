"""One construct per pattern; each states its secure defaults in its docstring."""

from .bundling import python_lambda_code
from .event_bus import InferbusBus
from .function import WorkflowFunction
from .queue_consumer import QueueConsumer, RoutedQueue
from .secure_queue import SecureQueue
from .workflow import Workflow

__all__ = ["InferbusBus", "QueueConsumer", "RoutedQueue", "SecureQueue", "Workflow", "WorkflowFunction", "python_lambda_code"]
