"""The demo's report as a document: Markdown with plots (matplotlib), written by ``inferbus demo --report``.

It holds the ledger of every event, the latency from submission to result per component, the
time each workflow spends in each stage, and the metrics the handlers emitted (EMF), as the
cloud dashboard would show them.

Example
-------
>>> path = write_report(run_demo(), Path("demo-report"))  # doctest: +SKIP
>>> path.name  # doctest: +SKIP
'report.md'
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .report import DEAD_LETTER_COPIES_NOTE, STAGE_TIME_NOTE, DemoReport, dead_letter_cell

__all__ = ["write_report"]

DPI = 110


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _stacked(panels: list[tuple[str, Any]], path: Path, xlabel: str, draw: Callable[[Any, Any], None]) -> bool:
    """One panel per ``(title, data)``, stacked, drawn by ``draw(axis, data)``; written to ``path``."""
    if not panels:
        return False
    plt = _pyplot()
    figure, axes = plt.subplots(len(panels), 1, figsize=(7, 1.9 * len(panels) + 0.6), squeeze=False)
    for axis, (title, data) in zip(axes[:, 0], panels, strict=True):
        draw(axis, data)
        axis.set_title(title, fontsize=9, loc="left")
        axis.tick_params(labelsize=8)
    axes[-1, 0].set_xlabel(xlabel, fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return True


def _latency_plot(report: DemoReport, path: Path) -> bool:
    """One histogram per component of the time from submission to result, in seconds."""
    def histogram(axis: Any, values: list[float]) -> None:
        axis.hist([value / 1000 for value in values], bins=min(30, max(5, len(values) // 3)), color="#4c72b0")
        axis.set_ylabel("events", fontsize=8)

    panels = [(f"{name}: {len(kind.latencies_ms)} results", kind.latencies_ms)
              for name, kind in report.kinds.items() if kind.latencies_ms]
    return _stacked(panels, path, "seconds from submission to result (embedded run)", histogram)


def _stage_plot(report: DemoReport, path: Path) -> bool:
    """Per workflow, a box per stage (in the order the stages run) of the time spent in it, in ms."""
    def boxes(axis: Any, stages: list[tuple[str, list[float]]]) -> None:
        axis.boxplot([values for _, values in stages], orientation="horizontal", showfliers=True)
        axis.set_yticks(range(1, len(stages) + 1), [stage for stage, _ in stages], fontsize=8)
        axis.invert_yaxis()  # the first stage on top
        axis.set_xscale("log")

    panels = []
    for name, workflow in sorted(report.workflows.items()):
        stages = [(stage, workflow.stage_ms[stage]) for stage in workflow.stage_order if workflow.stage_ms.get(stage)]
        if stages:
            panels.append((f"{name}: time in each stage", stages))
    return _stacked(panels, path, "ms in the state, per execution (log scale)", boxes)


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(row) for row in rows)]


def _figure(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def write_report(report: DemoReport, folder: Path) -> Path:
    """Write ``report.md`` and its plots (PNG) to ``folder``; return the Markdown file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    data = report.as_dict()
    verdict = "every event accounted for" if report.balanced else "**the ledger does not balance**"
    lines = ["# inferbus embedded demo", "",
             f"{verdict}, in {report.seconds:.1f} s; {report.rejected_by_bus} entries rejected by PutEvents; "
             f"{len(report.invalid_results)} published events break their contract.", "",
             "## Ledger: every event sent, and where it ended up", ""]
    lines += _table(["component", "input", "sent", "malformed", "duplicates", "results", "rejected", "unrouted", "failed",
                     "in DLQs", "balanced", "accuracy"],
                    [[name, kind["input_type"], kind["sent"], kind["malformed"], kind["duplicate_deliveries"], kind["results"],
                      kind["rejected"], kind["unrouted"], kind["failure_events"], dead_letter_cell(kind),
                      "yes" if kind["balanced"] else "**no**", _figure(kind["accuracy"], 3)]
                     for name, kind in data["kinds"].items()])
    lines += ["", "Rejected: kept in the invalid-events queue with the reason; unrouted: taken by no rule of the bus, "
              "kept there by the unrouted-events check with the reason; failed: a workflow gave up after its "
              f"retries and emitted its failure event; in DLQs: {DEAD_LETTER_COPIES_NOTE}.", ""]
    if _latency_plot(report, folder / "latency.png"):
        lines += ["## Latency, submission to result", "",
                  "![a histogram per component of the seconds from submitting an event to its result](latency.png)", ""]
    if _stage_plot(report, folder / "stages.png"):
        lines += ["## Time in each workflow stage", "",
                  "![per workflow, a box plot of the ms each execution spent in each state](stages.png)", "",
                  STAGE_TIME_NOTE, ""]
    if data["flows"]:
        lines += ["## What the dashboard would show", "",
                  "From the EMF metrics the handlers emitted (ms, p50/p95): event latency is now minus the event's "
                  "`time` when the stage took it; processing is the stage's own time. Throttles, concurrency, CPU and "
                  "memory are measured only in AWS.", ""]
        rows = []
        for name, flow in data["flows"].items():
            for index, (stage, figures) in enumerate(flow["stages"].items()):
                first = index == 0
                latency, processing = figures["event_latency_ms"], figures["processing_ms"]
                rows.append([name if first else "", stage, f"{_figure(latency['p50'])}/{_figure(latency['p95'])}",
                             f"{_figure(processing['p50'])}/{_figure(processing['p95'])}",
                             _figure(flow["error_rate_percent"], 1) if first else "",
                             _figure(flow["per_minute"]) if first else "",
                             flow["put_events_failed_entries"] if first and flow["kind"] == "consumer" else ""])
        lines += _table(["flow", "stage", "event latency", "processing", "errors %", "per minute", "PutEvents failed"], rows)
        lines += ["", "### Every count the handlers emitted, summed over the run", ""]
        lines += _table(["metric", "sum"], [[name, f"{value:g}"] for name, value in sorted(data["metrics"].items())
                                            if not name.endswith("Ms")])
        lines.append("")
    if data["replay"] is not None:
        replay = data["replay"]
        lines += ["## Replay of the archive", "",
                  f"{replay['replayed']} archived events replayed ({replay['replay']}): consumers skipped "
                  f"{replay['duplicates_skipped']} as duplicates, workflows ended {replay['workflow_duplicates']} executions "
                  f"as Duplicate, {replay['rerejected']} inputs were refused again; new results: "
                  f"{len(replay['new_results'])} ({'safe' if replay['safe'] else '**work done twice**'}).", ""]
    lines += ["## Not run locally", ""]
    lines += [f"- {entry}" for entry in sorted({f"{t}: {why}" for _, t, why in report.cloud_only})]
    path = folder / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
