"""``inferbus chaos``: each flow under injected faults, then a ledger of every event (:mod:`.run`, :mod:`.report`)."""

from .run import ChaosError, ChaosReport, FaultRates, Flow, FlowReport, Ledger, chaos_overrides, resolve_flows, run_chaos

__all__ = ["ChaosError", "ChaosReport", "FaultRates", "Flow", "FlowReport", "Ledger", "chaos_overrides", "resolve_flows",
           "run_chaos"]
