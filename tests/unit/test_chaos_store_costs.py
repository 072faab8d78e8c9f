"""What a chaos run's claims cost: DynamoDB's request units counted per item from the requests that went through,
Redis's ECPUs from its store, and the two printed side by side."""

from __future__ import annotations

from rich.console import Console

from inferbus.chaos.rates import FaultRates
from inferbus.chaos.report import print_claims_bills
from inferbus.chaos.run import ChaosReport, FlowReport
from inferbus.chaos.store_costs import FIXED_MONTHLY_USD, MeteredDynamoDB, StoreBill


class Answering:
    """A stand-in DynamoDB endpoint: answers every request, leaving ``unprocessed`` items of a batch write."""

    def __init__(self, unprocessed: int = 0) -> None:
        self.unprocessed = unprocessed

    def transact_write_items(self, **request):
        return {}

    def batch_write_item(self, **request):
        (table, items), = request["RequestItems"].items()
        return {"UnprocessedItems": {table: items[: self.unprocessed]} if self.unprocessed else {}}

    def batch_get_item(self, **request):
        return {"Responses": {}}


def test_request_units_are_counted_per_item_and_unprocessed_items_bill_nothing():
    metered = MeteredDynamoDB(Answering(unprocessed=5))
    metered.transact_write_items(TransactItems=[{}] * 10)  # 2 units per transactional item
    metered.batch_write_item(RequestItems={"t": [{}] * 25})  # 20 processed
    metered.batch_get_item(RequestItems={"t": {"Keys": [{}] * 10}})  # half a unit per key
    assert (metered.write_units, metered.read_units) == (40, 5)


def test_both_stores_are_printed_side_by_side_per_run():
    report = ChaosReport(200, FaultRates(), 7)
    for store, requests, units, usd in (("dynamodb", {"transact_write_items": 30}, {"write_units": 600.0}, 3.75e-4),
                                        ("redis", {"evalsha": 30}, {"ecpus": 800.0}, 1.84e-6)):
        flow = FlowReport("scorer", ["scorer"], 200, claims_store=store)
        flow.claims_bill = StoreBill(store, requests, units, usd)
        report.flows[f"scorer ({store})"] = flow
    console = Console(record=True, width=200)
    print_claims_bills(report, console)
    text = console.export_text()
    assert "scorer (dynamodb)" in text and "scorer (redis)" in text
    assert "1.8750" in text and "0.0092" in text  # dollars per million inputs: usd * 1e6 / 200
    assert f"{FIXED_MONTHLY_USD['redis']:.2f}" in text and "0.15" in text  # requests per input: 30 / 200
