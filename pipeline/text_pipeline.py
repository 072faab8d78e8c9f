"""The sequential pattern: TextSubmitted -> tokenize -> part of speech -> named entities -> sentiment -> TextAnalyzed.

The tagger and the recogniser were trained on UD English-EWT and Universal NER (CC BY-SA 4.0;
``models/build_tagging.py``); the sentiment is a head on a MiniLM sentence embedding.
"""

from inferbus.model.declarations import EventFilter, Task, Workflow
from inferbus.model.demo import Corruption, DemoInputs
from inferbus.model.settings import FunctionSettings

from ._held_out import review_sentences

ENCODER = "minilm-l6-int8"
TAGGER = "text-upos"
RECOGNISER = "text-ner"

COMPONENTS = [
    Workflow(
        name="text-pipeline",
        description="TextSubmitted -> tokenize -> part of speech -> entities -> embed -> sentiment -> TextAnalyzed",
        definition="text_pipeline.asl.json",
        accepts=EventFilter("TextSubmitted"),
        emits=("TextAnalyzed",),
        failure="TextAnalysisFailed",
        tasks={
            "Tokenize": Task("text_pipeline.tokenize.lambda_handler", models=(ENCODER,),
                             description="Text -> words with offsets, MiniLM token ids"),
            "Tag": Task("text_pipeline.tag.lambda_handler", models=(TAGGER,),
                        description="Words -> Universal part-of-speech tags (BiLSTM)"),
            "Recognise": Task("text_pipeline.recognise.lambda_handler", models=(RECOGNISER,),
                              description="Words + tags -> entities PER/ORG/LOC (BiLSTM) and patterns"),
            # More memory is more vCPU for the encoder; package="image" ships it as a container image.
            "Embed": Task("text_pipeline.embed.lambda_handler", models=(ENCODER,), settings=FunctionSettings(memory_mb=2048),
                          description="Token ids -> sentence embedding"),
            "Classify": Task("text_pipeline.classify.lambda_handler", models=("text-sentiment",),
                             description="Embedding -> sentiment"),
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
