"""Scores transactions for risk: TransactionSubmitted in (SQS), RiskScored out (EventBridge)."""
