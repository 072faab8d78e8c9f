"""``inferbus chaos``: each flow under injected faults, then a ledger of every event (:mod:`.run`, :mod:`.report`)."""

from .faults import FaultInjector, inject_faults
from .rates import FaultRates
from .run import ChaosError, ChaosReport, Flow, FlowReport, Ledger, chaos_overrides, resolve_flows, run_chaos

__all__ = ["ChaosError", "ChaosReport", "FaultInjector", "FaultRates", "Flow", "FlowReport", "Ledger", "chaos_overrides",
           "inject_faults", "resolve_flows", "run_chaos"]
