"""Shared code of inferbus's Lambda functions: contracts, inference, publishing, claims (the exactly-once
store), sources (where a consumer's records come from), the consumer.

This package ships inside every Lambda bundle; it imports nothing else of the
project and reads its configuration only from the environment the stack sets.
"""

from .cold_start import hold_collection

hold_collection()  # in Lambda only, until the first invocation: see cold_start
