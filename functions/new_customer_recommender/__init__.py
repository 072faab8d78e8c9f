"""Recommends movies to new customers by their demographic segment (a state table): TransactionApproved in, Recommended out."""
