"""Recommends movies to returning customers from their history (a state table): TransactionApproved in, Recommended out."""
