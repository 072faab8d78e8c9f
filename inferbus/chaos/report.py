"""The chaos run for people: per flow, the faults that happened and the ledger of every input."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from inferbus.runtime import RUNTIME_EXITED, TIMED_OUT

from .run import ChaosReport, FlowReport
from .store_costs import FIXED_MONTHLY_USD

LEDGER_COLUMNS = ("processed exactly once", "in a DLQ", "failure event (reason)", "pending review", "processed twice",
                  "results repeated", "repeated, no recorded cause", "lost", "also in a DLQ, processed",
                  "results out of key order", "balanced")


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({part / max(whole, 1):.1%})"


def print_flow(flow: FlowReport, console: Console) -> None:
    timeouts = flow.failed_invocations.get(TIMED_OUT[0], 0)
    crashes = flow.failed_invocations.get(RUNTIME_EXITED[0], 0)
    faults = Table(title=f"flow {flow.flow} ({' → '.join(flow.stages)}): {flow.events} inputs, {flow.seconds:.0f} s",
                   show_header=False, title_justify="left")
    faults.add_column(style="bold")
    faults.add_column()
    faults.add_row("injected transient errors", _share(flow.injected_errors, flow.injectable) + f" {flow.injectable_kind}")
    faults.add_row("invocations timed out / crashed", f"{_share(timeouts, flow.invocations)} / {crashes}; "
                   f"in-progress claims released: {flow.claims_expired}")
    if flow.crashes_before_complete or flow.records_failed_by_claim_throttling or flow.republishable:
        causes = ", ".join(f"{count} {cause}" for cause, count in sorted(flow.republishable_by_cause.items()))
        faults.add_row("results published, claim left in progress",
                       f"{sum(flow.republishable.values())} recorded ({causes or 'none'}); "
                       f"{flow.crashes_before_complete} invocations crashed between publishing and completing")
        faults.add_row(f"claims the store ({flow.claims_store}) would not take",
                       f"{flow.records_failed_by_claim_throttling} records (redelivered)")
    faults.add_row("duplicate deliveries", f"{_share(flow.duplicates_delivered, flow.events)}; skipped as duplicates: "
                   f"{flow.duplicates_skipped}")
    if flow.reviews:
        faults.add_row("reviews played", ", ".join(f"{k} {v}" for k, v in sorted(flow.reviews.items())))
    if flow.failure_reasons:
        faults.add_row("failure events by error", ", ".join(f"{k} {v}" for k, v in sorted(flow.failure_reasons.items())))
    console.print(faults)
    # One row per outcome, one column per moment: it reads at 80 columns and piped.
    ledger = Table(title=f"ledger of {flow.flow}: where every input ended up", title_justify="left")
    ledger.add_column("")
    moments = [("after the faults", flow.ledger)] + ([("after redrive", flow.after_redrive)] if flow.after_redrive else [])
    cells: list[list[str]] = []
    for name, entry in moments:
        ledger.add_column(name, justify="right")
        # After the faults are off and the DLQ redriven, every input (all valid) must have been processed.
        ok = entry.balanced(flow.events) and not (entry is flow.after_redrive and flow.stuck)
        cells.append([str(entry.processed_once), str(entry.in_dead_letter_queue), str(entry.failed_with_reason),
                      str(entry.pending_review), str(entry.processed_twice),
                      str(entry.repeated_results), str(entry.repeats_unexplained), str(entry.lost),
                      str(entry.dead_lettered_after_processing), str(entry.out_of_order),
                      "[green]yes[/green]" if ok else "[red]NO[/red]"])
    for row, column in enumerate(LEDGER_COLUMNS):
        ledger.add_row(column, *(values[row] for values in cells))
    console.print(ledger)
    console.print(f"{flow.result_events} result events in all; {flow.redriven} redriven")
    for name, entry in moments:
        if entry.unexplained_results:
            console.print(f"[red]{name}: results repeated without a recorded cause: "
                          f"{', '.join(entry.unexplained_results[:10])}[/red]")
    if flow.stuck:
        console.print(f"[red]{flow.stuck} valid inputs still fail with the faults off: "
                      "a bug of the flow, not an incident (see inferbus redrive --dry-run for why)[/red]")


def print_claims_bills(report: ChaosReport, console: Console) -> None:
    """Each run's consumers' claims traffic, one row per run: requests, billed units, dollars per million inputs and
    the store's fixed monthly cost, so two stores read side by side. (A workflow's ``Accept`` is not metered.)"""
    runs = [(name, flow.events, bill) for name, flow in report.flows.items()
            if (bill := flow.claims_bill) is not None and bill.requests]
    if not runs:
        return
    table = Table(title="what the consumers' claims cost (us-east-1 list prices: inferbus/chaos/store_costs.py)",
                  title_justify="left")
    for column in ("run", "requests", "per input", "billed units", "$ / M inputs", "fixed $ / month"):
        table.add_column(column, justify="left" if column in ("run", "billed units") else "right")
    for name, events, bill in runs:
        requests = sum(bill.requests.values())
        table.add_row(name, str(requests), f"{requests / max(events, 1):.2f}",
                      ", ".join(f"{unit} {amount:g}" for unit, amount in sorted(bill.units.items())),
                      f"{bill.per_million(events):.4f}", f"{FIXED_MONTHLY_USD.get(bill.store, 0.0):.2f}")
    console.print(table)


def print_chaos_report(report: ChaosReport, console: Console | None = None) -> None:
    console = console or Console()
    console.print(f"[bold]inferbus chaos[/bold]: {len(report.flows)} flow(s), {report.events} inputs each, seed "
                  f"{report.seed}, {report.seconds:.0f} s — "
                  + ("[bold green]every ledger balances[/bold green]" if report.balanced else "[bold red]A LEDGER DOES NOT BALANCE[/bold red]"))
    for flow in report.flows.values():
        print_flow(flow, console)
    print_claims_bills(report, console)
