"""The whole demo through the embedded runtime: every event sent is classified once or in a DLQ."""

from inferbus.demo import run_demo


def test_demo_ledger_balances(template):
    report = run_demo(images=60, duplicates=4, template=template)
    assert report.rejected_by_bus == 0
    assert report.classified == 60
    assert report.duplicate_results == 0
    assert report.in_dead_letter_queues == report.sent_malformed == 6
    assert report.classified + report.in_dead_letter_queues == report.sent_valid + report.sent_malformed
    assert report.balanced
    assert report.accuracy >= 0.95
    assert report.metrics["DuplicatesSkipped"] == 4
    assert all(reason != "?" for reason in report.dead_letter_reasons.values())
