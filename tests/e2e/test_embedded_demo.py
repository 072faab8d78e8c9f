"""The whole demo through the embedded runtime: every event of every kind accounted for."""

from inferbus.demo import run_demo


def test_demo_ledger_balances_for_every_kind_of_event(template):
    report = run_demo(images=40, analyses=4, texts=8, transactions=12, duplicates=4, template=template)
    assert report.rejected_by_bus == 0
    assert report.invalid_results == []
    kinds = report.kinds
    for name, kind in kinds.items():
        assert kind.balanced, name
        assert kind.duplicate_results == 0, name
        assert kind.results == kind.sent, name  # every valid event got its result ...
        assert kind.rejected == kind.malformed, name  # ... every bad one was kept aside with its reason
        assert kind.failure_events == kind.in_dead_letter_queues == 0, name
    assert set(report.rejection_reasons) == {f"malformed-{kind}-{i}" for kind, n in
                                             (("image", 6), ("analysis", 1), ("text", 2), ("transaction", 2)) for i in range(n)}
    assert kinds["image"].accuracy >= 0.95 and kinds["analysis"].accuracy >= 0.75
    assert report.metrics["DuplicatesSkipped"] == 4
    assert report.dead_letters and not any(report.dead_letters.values())

    routing = report.routing
    assert routing["scored"] == 12
    assert routing["auto_approved"] + report.reviews["requested"] == 12
    assert report.reviews["requested"] == routing["reviews_completed"] >= 1 and report.reviews["still_pending"] == 0
    approved_by_reviewer = routing.get("approved_by_reviewer", 0)
    assert routing["offers_new"] + routing["offers_returning"] == routing["auto_approved"] + approved_by_reviewer
    assert report.balanced
    for workflow in ("TextPipeline", "VisionFanout", "AutoApprove", "RiskReview"):
        assert report.workflows[workflow].statuses.get("SUCCEEDED", 0) >= 1, workflow
