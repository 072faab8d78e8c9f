"""Held-out scores read from manifest entries (``inferbus.model.scores``), and the README's table of flows
built from them: one row per declared component, its scores as the manifest records them."""

from __future__ import annotations

from inferbus.model import Consumer, EventFilter, Task, Workflow
from inferbus.model.scores import component_models, component_scores, model_scores, scores_data
from inferbus.reference import README, flows_table
from tests.declared import PIPELINE

ENTRY = {
    "metrics": {"holdout_upos_accuracy": 0.91, "holdout_entity_f1": 0.77, "holdout_size": 500,
                "holdout_majority_baseline": 0.3, "holdout_accuracy_by_corpus": {"a": 0.9}, "holdout_flag": True,
                "roc_auc": 0.99, "holdout_accuracy": None},
    "built_with": {"dataset": "UD English EWT: treebank sentences (CC BY-SA 4.0)"},
}


def test_scores_are_the_holdout_numbers_without_counts_baselines_nested_or_unmeasured_figures():
    assert model_scores(ENTRY) == {"upos_accuracy": 0.91, "entity_f1": 0.77}
    assert scores_data(ENTRY) == "UD English EWT, 500 held out"
    assert model_scores({}) == {} and scores_data({"metrics": {"holdout_size": 3}}) is None


def test_a_component_with_two_scored_models_keeps_their_shared_metric_apart():
    models = {"tagger": ENTRY, "detector": {"metrics": {"holdout_map50": 0.6, "holdout_entity_f1": 0.5},
                                           "built_with": {"dataset": "COCO val2017 (Microsoft)"}},
              "encoder": {"metrics": {"cosine_min": 0.99}}}
    workflow = Workflow(name="doc-reader", accepts=EventFilter("DocSubmitted"), emits="DocRead",
                        definition="statemachines/doc_reader.asl.json", failure="DocReadFailed",
                        tasks={"Tag": Task("doc.tag.lambda_handler", models=("encoder", "tagger")),
                               "Detect": Task("doc.detect.lambda_handler", models=("detector", "encoder"))})
    assert component_models(workflow) == ("encoder", "tagger", "detector")
    assert component_scores(workflow, models) == {
        "scores": {"upos_accuracy": 0.91, "entity_f1 (tagger)": 0.77, "map50": 0.6, "entity_f1 (detector)": 0.5},
        "scores_data": "UD English EWT, 500 held out; COCO val2017"}
    unscored = Consumer(name="plain", handler="plain.handler.lambda_handler", accepts=EventFilter("PlainSubmitted"),
                        emits="PlainDone", models=("encoder", "missing"))
    assert component_scores(unscored, models) == {"scores": {}, "scores_data": None}


def test_the_table_of_flows_has_a_row_per_declared_component_with_its_scores_and_data():
    import json

    models = json.loads((README.parent / "models" / "manifest.json").read_text())["models"]
    rows = flows_table(PIPELINE, models).splitlines()[2:]
    assert len(rows) == len(PIPELINE.components)
    for component, row in zip(PIPELINE.components, rows, strict=True):
        assert row.startswith(f"| {component.name} (")
        held_out = component_scores(component, models)
        for metric, value in held_out["scores"].items():
            assert f"{metric} {value:.4g}" in row
        assert (held_out["scores_data"] or "—") in row


def test_a_score_that_is_a_share_of_the_rows_is_refused_outside_0_to_1_and_an_error_is_not():
    import pytest

    from inferbus.scaffold.errors import ScaffoldError
    from inferbus.scaffold.models_add import parse_scores

    assert parse_scores(["accuracy=0.9", "entity_f1=1", "map50=0", "mae=7.5"]) == {
        "accuracy": 0.9, "entity_f1": 1.0, "map50": 0.0, "mae": 7.5}
    for pair in ("accuracy=1.7", "upos_accuracy=93", "entity_f1=-0.1"):
        with pytest.raises(ScaffoldError, match="is a fraction, 0 to 1"):
            parse_scores([pair])
