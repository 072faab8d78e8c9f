"""Run inferbus's synthesized CloudFormation template in one process, on moto.

The runtime reads only the template (resources, properties, handler names) and talks
to moto through boto3, so what runs here is what the stack would deploy.
"""

from .embedded import EmbeddedPipeline

__all__ = ["EmbeddedPipeline"]
