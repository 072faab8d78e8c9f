"""The text pipeline's tagger (text-upos) and recogniser (text-ner) as shipped: their files are the
manifest's, they score what the manifest records, and they beat the baseline measured with them.

The sample in ``models/tagging-holdout.jsonl`` (sentences of the test split of UD English-EWT and
Universal NER, Mayhew et al. NAACL 2024, CC BY-SA 4.0) ships, so those tests always run; the tests
over the whole test split need the data beside the project (``../shared/data/ud-english-ewt``,
or ``INFERBUS_TAGGING_DATA``) and skip where it is absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest
from inferbus_lambda.manifest import ModelInfo
from inferbus_lambda.tagging import SequenceTagger, bio_spans

from inferbus.model.scores import model_scores

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
MANIFEST = json.loads((MODELS / "manifest.json").read_text())
SAMPLE = "tagging-holdout.jsonl"
DATA = Path(os.environ.get("INFERBUS_TAGGING_DATA", ROOT.parent / "shared" / "data" / "ud-english-ewt"))


def load(name: str) -> SequenceTagger:
    entry = MANIFEST["models"][name]
    return SequenceTagger.from_info(ModelInfo(name, entry["version"], MODELS / entry["file"], entry))


@pytest.fixture(scope="module")
def tagger() -> SequenceTagger:
    return load("text-upos")


@pytest.fixture(scope="module")
def recogniser() -> SequenceTagger:
    return load("text-ner")


@pytest.fixture(scope="module")
def sample() -> list[dict]:
    return [json.loads(line) for line in (MODELS / SAMPLE).read_text().splitlines()]


def build_script():
    sys.path.insert(0, str(MODELS))
    import build_tagging  # the script's own readers and scorers: one definition of the metrics

    return build_tagging


def test_tagging_files_match_their_manifest_sha256():
    for name in ("text-upos", "text-ner"):
        entry = MANIFEST["models"][name]
        data = (MODELS / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"]
        assert len(data) < 5_000_000, f"{name} is meant to stay a small model"
    assert hashlib.sha256((MODELS / SAMPLE).read_bytes()).hexdigest() == MANIFEST["datasets"][SAMPLE]["sha256"]


def test_scores_are_named_as_the_demo_shows_them_and_credit_the_data():
    upos, ner = MANIFEST["models"]["text-upos"], MANIFEST["models"]["text-ner"]
    assert set(model_scores(upos)) == {"upos_accuracy"}
    assert set(model_scores(ner)) >= {"entity_f1"}
    for entry in (upos, ner):
        assert "CC BY-SA 4.0" in entry["built_with"]["dataset"]


def test_every_tag_the_models_can_answer_fits_the_text_analyzed_contract(tagger, recogniser):
    from inferbus_lambda.contracts import UPOS_TAGS, TaggedWord

    assert set(tagger.labels) <= set(UPOS_TAGS) and recogniser.upos_labels == list(tagger.labels)
    for upos in tagger.labels:
        for ner in recogniser.labels:
            TaggedWord(text="w", start=0, end=1, upos=upos, ner=ner)


def test_the_shipped_tagger_reproduces_its_recorded_sample_accuracy(tagger, sample):
    pairs = [(g, p) for row in sample for g, p in zip(row["upos"], tagger.tag(row["words"]), strict=True)]
    accuracy = sum(g == p for g, p in pairs) / len(pairs)
    assert round(accuracy, 4) == MANIFEST["models"]["text-upos"]["metrics"]["sample_upos_accuracy"]
    assert len(pairs) >= 300


def test_the_shipped_recogniser_reproduces_its_recorded_sample_f1(tagger, recogniser, sample):
    scripts = build_script()
    predicted = [recogniser.tag(row["words"], tagger.tag(row["words"])) for row in sample]
    f1 = scripts.entity_scores([row["ner"] for row in sample], predicted)["f1"]
    assert round(f1, 4) == MANIFEST["models"]["text-ner"]["metrics"]["sample_entity_f1"]
    assert any(bio_spans(tags) for tags in predicted)


def test_the_recogniser_tags_sentences_it_never_saw(tagger, recogniser):
    # Written for this test (not from the corpus): a person, an organisation, a place each.
    sentences = [("Angela Merkel met the board of Siemens in Munich .", {("PER", "Angela Merkel"), ("ORG", "Siemens"),
                                                                           ("LOC", "Munich")}),
                 ("I flew to Canada with John last summer .", {("LOC", "Canada"), ("PER", "John")})]
    for sentence, expected in sentences:
        words = sentence.split()
        found = {(s.type, " ".join(words[s.first:s.last + 1])) for s in bio_spans(recogniser.tag(words, tagger.tag(words)))}
        assert len(found & expected) >= len(expected) - 1, (sentence, found)


def test_a_recogniser_refuses_tags_its_upos_input_does_not_know(recogniser):
    with pytest.raises(ValueError, match="does not know the part-of-speech tags"):
        recogniser.tag(["Paris"], ["CITY"])
    with pytest.raises(ValueError, match="one part-of-speech tag per word"):
        recogniser.tag(["Paris", "is"], ["PROPN"])


needs_data = pytest.mark.skipif(not (DATA / "en_ewt-ud-test.conllu").is_file(),
                                reason=f"UD English-EWT is not at {DATA} (set INFERBUS_TAGGING_DATA to run these)")


@needs_data
def test_the_tagger_scores_what_the_manifest_says_on_the_test_split_and_beats_its_baseline(tagger):
    scripts = build_script()
    test = scripts.read_conllu(DATA / "en_ewt-ud-test.conllu")
    metrics = MANIFEST["models"]["text-upos"]["metrics"]
    accuracy = scripts.accuracy([t for _, t in test], [tagger.tag(w) for w, _ in test])
    assert round(accuracy, 4) == metrics["holdout_upos_accuracy"]
    assert accuracy > metrics["holdout_upos_accuracy_most_frequent_tag_baseline"]


@needs_data
def test_the_recogniser_scores_what_the_manifest_says_on_the_test_split_and_beats_its_baseline(tagger, recogniser):
    scripts = build_script()
    test = scripts.read_iob2(DATA / "uner_en_ewt-test.iob2")
    metrics = MANIFEST["models"]["text-ner"]["metrics"]
    predicted = [recogniser.tag(w, tagger.tag(w)) for w, _ in test]
    f1 = scripts.entity_scores([t for _, t in test], predicted)["f1"]
    assert round(f1, 4) == metrics["holdout_entity_f1"]
    assert f1 > metrics["holdout_entity_f1_most_frequent_tag_baseline"]


@pytest.mark.parametrize(("name", "metric"), [("text-upos", "holdout_upos_accuracy"), ("text-ner", "holdout_entity_f1")])
def test_each_model_beats_every_baseline_recorded_beside_it(name, metric):
    metrics = MANIFEST["models"][name]["metrics"]
    baselines = {key: value for key, value in metrics.items() if key.startswith(metric) and key.endswith("_baseline")}
    assert baselines, f"{name} records no baseline for {metric}"
    assert all(metrics[metric] > value for value in baselines.values()), baselines
