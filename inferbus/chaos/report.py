"""The chaos run for people: the faults that happened, and the ledger of every event."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from inferbus.runtime import RUNTIME_EXITED, TIMED_OUT

from .run import ChaosReport


def print_chaos_report(report: ChaosReport, console: Console | None = None) -> None:
    console = console or Console()
    timeouts = report.failed_invocations.get(TIMED_OUT[0], 0)
    crashes = report.failed_invocations.get(RUNTIME_EXITED[0], 0)
    faults = Table(title=f"chaos: {report.events} events through {report.consumer}, seed {report.seed}, "
                   f"{report.seconds:.0f} s", show_header=False, title_justify="left")
    faults.add_column(style="bold")
    faults.add_column()
    faults.add_row("records failed by injected transient errors",
                   f"{report.records_failed_by_injection} of {report.deliveries} deliveries "
                   f"({report.records_failed_by_injection / max(report.deliveries, 1):.1%})")
    faults.add_row("invocations timed out / crashed after publishing half",
                   f"{timeouts} / {crashes} of {report.invocations} ({timeouts / max(report.invocations, 1):.1%} / "
                   f"{crashes / max(report.invocations, 1):.1%}); in-progress claims released: {report.claims_expired}")
    faults.add_row("crashed between publishing and completing claims",
                   f"{report.crashes_before_complete} invocations, with {report.results_before_complete} results published "
                   "and not yet completed")
    faults.add_row("DynamoDB throttling",
                   f"{report.records_failed_by_claim_throttling} records whose claim was throttled (redelivered); "
                   f"{report.claims_not_completed} published records whose completion was throttled")
    faults.add_row("duplicate deliveries", f"{report.duplicates_delivered} ({report.duplicates_delivered / report.events:.1%} "
                   f"of events); skipped as duplicates: {report.duplicates_skipped}")
    console.print(faults)
    ledger = Table(title="ledger: where every event ended up", title_justify="left")
    for column in ("", "processed exactly once", "in the DLQ", "processed twice", "results repeated", "lost",
                   "also in the DLQ, processed", "balanced"):
        ledger.add_column(column, justify="right")
    rows = [("after the faults", report.ledger)] + ([("after redrive", report.after_redrive)] if report.after_redrive else [])
    for name, entry in rows:
        ok = entry.balanced(report.events, report.repeat_bound)
        ledger.add_row(name, str(entry.processed_once), str(entry.in_dead_letter_queue), str(entry.processed_twice),
                       f"{entry.repeated_results} (bound {report.repeat_bound})", str(entry.lost),
                       str(entry.dead_lettered_after_processing),
                       "[green]yes[/green]" if ok else "[red]NO[/red]")
    console.print(ledger)
    processed = report.ledger.processed_once + report.ledger.processed_twice
    console.print(f"{processed} processed + {report.ledger.in_dead_letter_queue} in the DLQ = "
                  f"{processed + report.ledger.in_dead_letter_queue} of {report.events} events; "
                  f"{report.result_events} result events in all; {report.redriven} redriven")
