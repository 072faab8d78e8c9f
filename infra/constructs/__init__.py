"""One construct per pattern; each states its secure defaults in its docstring."""

from .bundling import python_lambda_code
from .event_bus import InferbusBus
from .queue_consumer import QueueConsumer
from .secure_queue import SecureQueue

__all__ = ["InferbusBus", "QueueConsumer", "SecureQueue", "python_lambda_code"]
