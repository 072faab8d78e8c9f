"""The whole demo through the embedded runtime: every event sent to every declared component accounted for,
then the archive replayed with nothing processed twice, and the report written."""

import json

import pytest
from inferbus_lambda.contracts import to_put_events_entry

from inferbus.demo import demo_components, run_demo
from inferbus.demo.inputs import UNROUTED, build_inputs, sample_events
from tests.declared import DEMO, PIPELINE, declared_takers

COMPONENTS = demo_components(PIPELINE)
# Small sizes for CI: a few samples each, and a duplicate delivery for every component that declares any.
COUNTS = {c.name: min(DEMO[c.name].count, 12) for c in COMPONENTS}
DUPLICATES = {c.name: min(DEMO[c.name].duplicates, 4) for c in COMPONENTS}
CONSUMERS = {c.name for c in PIPELINE.consumers}


def consumers_taking(component, count: int) -> int:
    """Deliveries to consumers of ``component``'s first ``count`` samples: every consumer whose declaration takes one
    gets it (several components may take one event type)."""
    return sum(len(declared_takers(to_put_events_entry(event, "bus")) & CONSUMERS)
               for event, _ in sample_events(component, count))


@pytest.fixture(scope="module")
def report(template):
    return run_demo(counts=COUNTS, duplicates=DUPLICATES, template=template, replay=True)


def test_demo_ledger_balances_for_every_component(report):
    assert report.rejected_by_bus == 0
    assert report.invalid_results == []
    assert set(report.kinds) == {c.name for c in COMPONENTS}
    for component in COMPONENTS:
        kind = report.kinds[component.name]
        assert kind.balanced, component.name
        assert kind.duplicate_results == 0, component.name
        assert kind.results == kind.sent == COUNTS[component.name], component.name  # every valid event got its result ...
        assert kind.rejected == len(DEMO[component.name].malformed), component.name  # ... every bad one kept aside ...
        assert kind.unrouted == len(UNROUTED), component.name  # ... those no rule takes by the unrouted-events check
        assert kind.malformed == kind.rejected + kind.unrouted, component.name
        assert kind.failure_events == kind.in_dead_letter_queues == 0, component.name
        if kind.scored:
            assert kind.accuracy >= 0.5, component.name  # far better than chance on held-out data
    assert set(report.rejection_reasons) == {f"malformed-{c.name}-{i}" for c in COMPONENTS
                                             for i in range(len(DEMO[c.name].malformed) + len(UNROUTED))}
    # each duplicate delivery is skipped by every consumer that takes it
    assert report.metrics["DuplicatesSkipped"] == sum(consumers_taking(c, DUPLICATES[c.name]) for c in COMPONENTS)
    assert report.dead_letters and not any(report.dead_letters.values())

    for event_type, chain in report.chains.items():  # results routed on: each taken, each with its outcome
        assert chain.produced >= 1 and chain.untaken == 0 and chain.missing == 0, event_type
    assert report.reviews.get("requested", 0) == report.reviews.get("approved", 0) + report.reviews.get("rejected", 0)
    assert report.reviews.get("still_pending", 0) == 0
    assert report.balanced
    for workflow in PIPELINE.workflows:
        assert report.workflows[workflow.name].statuses.get("SUCCEEDED", 0) >= 1, workflow.name


def test_replaying_the_archive_processes_nothing_twice(report):
    replay = report.replay
    assert replay.replayed > 0 and replay.new_results == [] and replay.safe
    valid_to_consumers = sum(consumers_taking(c, COUNTS[c.name]) + consumers_taking(c, DUPLICATES[c.name])
                             for c in COMPONENTS)
    # A consumer fed by another component's results (a recommender by the approvals) gets each result it took
    # back from the archive too: what it published in the run, one per event it took.
    taken_directly = {taker for c in COMPONENTS for event, _ in sample_events(c, 1)
                      for taker in declared_takers(to_put_events_entry(event, "bus"))}
    downstream = sum(report.flows[name].consumed for name in CONSUMERS - taken_directly)
    assert replay.duplicates_skipped == valid_to_consumers + downstream  # every valid event a consumer took, skipped
    assert replay.workflow_duplicates >= sum(COUNTS[w.name] for w in PIPELINE.workflows if w.name in COUNTS)
    # Inputs that broke their contract are refused again, with the same ids, by every component that takes them: a
    # consumer once; a workflow twice, since the archive also holds the failure event of the first refusal, and its
    # rule brings it back too; those no rule takes, once more by the unrouted-events check.
    sent = build_inputs(PIPELINE, "bus", counts=COUNTS, duplicates=DUPLICATES)
    malformed = [entry for entry in sent.entries if json.loads(entry["Detail"]).get("id") in sent.reasons]
    assert len(malformed) == sum(len(DEMO[c.name].malformed) + len(UNROUTED) for c in COMPONENTS)
    assert replay.rerejected == sum(sum(1 if taker in CONSUMERS else 2 for taker in declared_takers(entry)) or 1
                                    for entry in malformed)


def test_each_flow_shows_latency_rate_and_errors_from_the_emf_its_handlers_emitted(report):
    for component in PIPELINE.producers:
        flow = report.flows[component.name]
        assert flow.handled >= 1 and flow.per_minute > 0, component.name
        for stage, figures in flow.stages.items():
            assert figures["processing_ms"], (component.name, stage)
            assert all(value >= 0 for value in figures["event_latency_ms"]), (component.name, stage)
        first = next(iter(flow.stages.values()))
        assert first["event_latency_ms"], component.name  # every flow's first stage reads the event's time
    for consumer in PIPELINE.consumers:
        assert report.flows[consumer.name].put_events_failed == 0


def test_the_report_is_a_document_with_its_plots(report, tmp_path):
    from inferbus.demo.document import write_report

    path = write_report(report, tmp_path / "demo-report")
    text = path.read_text()
    for component in COMPONENTS:
        assert f"| {component.name} |" in text
    for image in ("latency.png", "stages.png"):
        assert f"]({image})" in text
        assert (path.parent / image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "## Replay of the archive" in text and "new results: 0 (safe)" in text


def test_the_summary_keeps_every_id_and_reason_word_whole_at_80_columns(report):
    import io

    from rich.console import Console

    from inferbus.demo.summary import print_summary

    out = io.StringIO()
    print_summary(report, Console(width=80, file=out, color_system=None))
    lines = out.getvalue().splitlines()
    reasons = {**report.rejection_reasons, **report.dead_letter_reasons}
    assert reasons, "the demo sends malformed copies: some events are kept with a reason"
    for event_id, reason in reasons.items():
        assert event_id in lines, event_id  # in full, on its own line: copied with a double-click
        words = [word for line in lines for word in line.split()]
        assert all(word in words for word in reason.split()), reason  # wrapped between words, never inside one


def test_each_component_carries_its_models_held_out_scores_and_the_summary_prints_them(report):
    """``scores`` per component: every ``metrics.holdout_<metric>`` number of the models it declares (counts and
    baselines aside), named ``<metric>`` (or ``<metric> (<model>)`` when two of its models share it)."""
    from io import StringIO
    from pathlib import Path

    from rich.console import Console

    from inferbus.demo.summary import print_summary
    from inferbus.model.scores import component_models

    manifest = Path(__file__).resolve().parents[2] / "models" / "manifest.json"
    models = json.loads(manifest.read_text())["models"]
    kinds = json.loads(json.dumps(report.as_dict()))["kinds"]  # as --json prints it
    shown = 0
    for component in COMPONENTS:
        recorded = [(model, key.removeprefix("holdout_"), value) for model in component_models(component)
                    for key, value in models[model].get("metrics", {}).items()
                    if key.startswith("holdout_") and type(value) is float and not key.endswith(("_baseline", "_size"))]
        scores = kinds[component.name]["scores"]
        assert sorted(scores.values()) == sorted(value for _, _, value in recorded), component.name
        for model, metric, value in recorded:
            assert scores.get(metric, scores.get(f"{metric} ({model})")) == value, (component.name, metric)
        assert (kinds[component.name]["scores_data"] is None) == (not recorded), component.name
        shown += bool(recorded)
    assert shown, "no demo component shows a held-out score: the shipped classifiers record holdout_accuracy"
    console = Console(file=StringIO(), width=500)  # wide enough that no cell folds
    print_summary(report, console)
    text = console.file.getvalue()
    for name, kind in kinds.items():
        for metric, value in kind["scores"].items():
            assert f"{metric} {value:.4g}" in text and kind["scores_data"] in text, (name, metric)
