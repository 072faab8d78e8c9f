"""Run inferbus's synthesized CloudFormation template in one process, on moto.

The runtime reads only the template (resources, properties, handler names) and talks
to moto through boto3 (plus the one Lambda adapter, :mod:`.lambda_adapter`), so what
runs here is what the stack would deploy.
"""

from .embedded import EmbeddedPipeline
from .executions import ExecutionInfo, StateTiming
from .provision import StateMachineInfo, UnsupportedTemplateError

__all__ = ["EmbeddedPipeline", "ExecutionInfo", "StateMachineInfo", "StateTiming", "UnsupportedTemplateError"]
