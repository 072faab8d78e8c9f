"""Run a synthesized CloudFormation template in one process, on moto.

The runtime knows AWS, not inferbus: it reads only the template (resources, properties,
handler names, outputs) and talks to moto through boto3 (plus the one Lambda adapter,
:mod:`.lambda_adapter`), so what runs here is what the stack would deploy. What is the
application's own comes in through :class:`HostConfig` and hooks; inferbus's are in
:mod:`inferbus.local`.
"""

from .embedded import EmbeddedPipeline
from .executions import ExecutionInfo, StateTiming
from .lambda_host import RUNTIME_EXITED, TIMED_OUT, HostConfig, LocalFunction
from .specs import StateMachineInfo, UnsupportedTemplateError

__all__ = ["EmbeddedPipeline", "ExecutionInfo", "HostConfig", "LocalFunction", "RUNTIME_EXITED", "StateMachineInfo",
           "StateTiming", "TIMED_OUT", "UnsupportedTemplateError"]
