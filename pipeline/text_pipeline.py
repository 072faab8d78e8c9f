"""The sequential pattern: TextSubmitted -> tokenize -> embed -> classify -> entities -> TextAnalyzed."""

from inferbus.model.declarations import EventFilter, Task, Workflow
from inferbus.model.demo import Corruption, DemoInputs
from inferbus.model.settings import FunctionSettings

from ._held_out import review_sentences

ENCODER = "minilm-l6-int8"

COMPONENTS = [
    Workflow(
        name="text-pipeline",
        description="TextSubmitted -> tokenize -> embed -> classify -> entities -> TextAnalyzed",
        definition="text_pipeline.asl.json",
        accepts=EventFilter("TextSubmitted"),
        emits=("TextAnalyzed",),
        failure="TextAnalysisFailed",
        tasks={
            "Tokenize": Task("text_pipeline.tokenize.lambda_handler", models=(ENCODER,),
                             description="Text -> MiniLM token ids"),
            # More memory is more vCPU for the encoder; package="image" ships it as a container image.
            "Embed": Task("text_pipeline.embed.lambda_handler", models=(ENCODER,), settings=FunctionSettings(memory_mb=2048),
                          description="Token ids -> sentence embedding"),
            "Classify": Task("text_pipeline.classify.lambda_handler", models=("text-sentiment",),
                             description="Embedding -> sentiment"),
            "Entities": Task("text_pipeline.entities.lambda_handler", description="Text -> entities (rules)"),
        },
    ),
]

DEMO = [
    DemoInputs(
        "text-pipeline",
        samples=review_sentences,
        count=40,
        limit=200,
        truth_field="sentiment.label",
        malformed=(
            Corruption("blank text", lambda d: d["data"].update(text="   ")),
            Corruption("text over 2,000 characters", lambda d: d["data"].update(text="word " * 500)),
        ),
    ),
]
