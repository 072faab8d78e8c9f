"""What the stack writes is what each handler validates (the synthesized template, run embedded)."""

from __future__ import annotations

from inferbus.model.names import FUNCTION_NAME
from tests.declared import PIPELINE


def test_each_consumers_handler_builds_from_its_template_environment(template):
    """What the stack writes is what the handler validates: the factory's own check, on each consumer."""
    from inferbus.local import LocalPipeline

    with LocalPipeline(template, tap=False) as pipeline:
        for consumer in PIPELINE.consumers:
            function = pipeline.function(pipeline.outputs[consumer.output_key(FUNCTION_NAME)])
            runtime = function.handler.runtime
            assert (runtime.environment.CONSUMES, runtime.environment.PRODUCES) == (consumer.accepts.type, consumer.result_type)
            assert list(runtime.models) == list(consumer.models)
