"""``inferbus chaos``: a consumer under injected faults, then a ledger of every event (:mod:`.run`, :mod:`.report`)."""

from .run import ChaosError, ChaosReport, FaultRates, Ledger, chaos_consumer, chaos_overrides, run_chaos

__all__ = ["ChaosError", "ChaosReport", "FaultRates", "Ledger", "chaos_consumer", "chaos_overrides", "run_chaos"]
