"""The whole demo through the embedded runtime: every event sent to every declared component accounted for."""

from inferbus.demo import demo_components, run_demo
from inferbus.demo.inputs import UNROUTED
from tests.declared import PIPELINE

COMPONENTS = demo_components(PIPELINE)
# Small sizes for CI: a few samples each, and a duplicate delivery for every component that declares any.
COUNTS = {c.name: min(c.demo.count, 12) for c in COMPONENTS}
DUPLICATES = {c.name: min(c.demo.duplicates, 4) for c in COMPONENTS}


def test_demo_ledger_balances_for_every_component(template):
    report = run_demo(counts=COUNTS, duplicates=DUPLICATES, template=template)
    assert report.rejected_by_bus == 0
    assert report.invalid_results == []
    assert set(report.kinds) == {c.name for c in COMPONENTS}
    for component in COMPONENTS:
        kind = report.kinds[component.name]
        assert kind.balanced, component.name
        assert kind.duplicate_results == 0, component.name
        assert kind.results == kind.sent == COUNTS[component.name], component.name  # every valid event got its result ...
        assert kind.rejected == len(component.demo.malformed), component.name  # ... every bad one kept aside ...
        assert kind.unrouted == len(UNROUTED), component.name  # ... those no rule takes by the unrouted-events check
        assert kind.malformed == kind.rejected + kind.unrouted, component.name
        assert kind.failure_events == kind.in_dead_letter_queues == 0, component.name
        if kind.scored:
            assert kind.accuracy >= 0.5, component.name  # far better than chance on held-out data
    assert set(report.rejection_reasons) == {f"malformed-{c.name}-{i}" for c in COMPONENTS
                                             for i in range(len(c.demo.malformed) + len(UNROUTED))}
    assert report.metrics["DuplicatesSkipped"] == sum(DUPLICATES[c.name] for c in PIPELINE.consumers if c.name in DUPLICATES)
    assert report.dead_letters and not any(report.dead_letters.values())

    for event_type, chain in report.chains.items():  # results routed on: each taken, each with its outcome
        assert chain.produced >= 1 and chain.untaken == 0 and chain.missing == 0, event_type
    assert report.reviews.get("requested", 0) == report.reviews.get("approved", 0) + report.reviews.get("rejected", 0)
    assert report.reviews.get("still_pending", 0) == 0
    assert report.balanced
    for workflow in PIPELINE.workflows:
        assert report.workflows[workflow.name].statuses.get("SUCCEEDED", 0) >= 1, workflow.name
