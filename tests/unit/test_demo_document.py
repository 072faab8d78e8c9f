"""The demo's Markdown report: every plot it writes is shown with a caption that says what is true of the run."""

from __future__ import annotations

import re

from inferbus.demo.document import write_report
from inferbus.demo.report import DemoReport, KindReport, WorkflowReport
from inferbus.runtime.lambda_host import DEFAULT_MAX_ENVIRONMENTS
from tests.declared import PIPELINE


def _report() -> DemoReport:
    """A run of every declared consumer and workflow, with latencies and stage times to plot."""
    report = DemoReport()
    for component in PIPELINE.consumers:
        report.kinds[component.name] = KindReport(component.name, "input", latencies_ms=[120.0, 180.0, 260.0])
    for workflow in PIPELINE.workflows:
        report.workflows[workflow.name] = WorkflowReport(workflow.name, stage_ms={"Accept": [3.0, 5.0], "Step": [40.0]},
                                                         stage_order=["Accept", "Step"])
    return report


def test_the_stage_plot_says_handlers_run_concurrently(tmp_path):
    text = write_report(_report(), tmp_path).read_text()
    section = text.split("## Time in each workflow stage", 1)[1].split("\n## ", 1)[0]
    assert "(stages.png)" in section
    assert "run concurrently" in section and f"at most {DEFAULT_MAX_ENVIRONMENTS} environments per function" in section
    assert "one handler runs at a time" not in text


def test_every_plot_written_is_shown_with_a_caption(tmp_path):
    text = write_report(_report(), tmp_path).read_text()
    shown = {image: alt for alt, image in re.findall(r"!\[([^\]]*)\]\(([^)]+)\)", text)}
    assert sorted(shown) == sorted(path.name for path in tmp_path.glob("*.png"))
    assert all(len(alt.split()) >= 5 for alt in shown.values()), shown  # says what it shows, not just a name


def test_the_ledger_shows_dead_lettered_copies_beside_the_dlq_count_and_says_what_they_are(tmp_path):
    report = _report()
    name = next(iter(report.kinds))
    report.kinds[name].in_dead_letter_queues, report.kinds[name].dead_lettered_copies = 1, 4
    text = write_report(report, tmp_path).read_text()
    row = next(line for line in text.splitlines() if line.startswith(f"| {name} "))
    assert "| 1 (+4 copies) |" in row, row
    assert "+N copies: duplicate deliveries of answered events" in text
