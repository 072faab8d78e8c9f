import json

import boto3
import pytest
from moto import mock_aws

from inferbus.cli import main


def test_send_puts_one_valid_image_event(capsys):
    with mock_aws():
        boto3.client("events", region_name="us-east-1").create_event_bus(Name="inferbus")
        assert main(["send", "--bus", "inferbus", "--image", "3"]) == 0
    sent = json.loads(capsys.readouterr().out)
    assert sent["true_label"] in range(10)
    assert sent["response"][0]["EventId"]


def test_demo_rejects_an_image_count_out_of_range(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--images", "0"])
    assert "--images: must be in [1, 300], got 0" in capsys.readouterr().err


def test_latency_histogram_counts_every_value_once():
    from inferbus.summary import latency_histogram

    rows = latency_histogram([1.0, 2.0, 2.5, 9.0, 10.0], bins=3, width=10)
    assert [int(row.rsplit(" ", 1)[1]) for row in rows] == [3, 0, 2]
    assert rows[0].count("█") == 10 and rows[2].count("█") == 7


@pytest.mark.parametrize(
    ("args", "event_type"),
    [(["--text", "Lovely weather in Lisbon."], "TextSubmitted"), (["--transaction", "7", "--segment", "new"], "TransactionSubmitted"),
     (["--image", "5", "--full"], "ImageSubmitted")],
)
def test_send_puts_each_kind_of_event(capsys, args, event_type):
    with mock_aws():
        boto3.client("events", region_name="us-east-1").create_event_bus(Name="inferbus")
        assert main(["send", "--bus", "inferbus", *args]) == 0
    sent = json.loads(capsys.readouterr().out)
    assert sent["type"] == event_type and sent["response"][0]["EventId"]


def test_send_refuses_an_event_that_breaks_its_contract(capsys):
    assert main(["send", "--bus", "inferbus", "--text", "   "]) == 2
    assert "text must not be blank" in capsys.readouterr().err


def test_reviews_list_and_approve_resume_the_waiting_workflow(template, capsys):
    from inferbus_lambda.contracts import Customer, TransactionSubmitted, new_event, to_put_events_entry

    from inferbus.demo import RISK_HOLDOUT
    from inferbus.runtime import EmbeddedPipeline

    import numpy as np

    risky = [float(v) for v in np.load(RISK_HOLDOUT)["features"][1]]  # held-out row 1: risk 1.0
    with EmbeddedPipeline(template) as pipeline:
        event = new_event(TransactionSubmitted(customer=Customer(id="c-1", segment="new"), features=risky), source="cli.test")
        pipeline.put_events([to_put_events_entry(event, pipeline.bus_name)])
        pipeline.drain()
        url = pipeline.queue("ReviewQueue").url

        assert main(["reviews", "list", "--queue-url", url]) == 0
        listing = capsys.readouterr().out
        assert "1 cases waiting for review" in listing and event.id[:8] in listing

        assert main(["reviews", "approve", event.id, "--queue-url", url, "--reviewer", "ana", "--note", "ok"]) == 0
        assert json.loads(capsys.readouterr().out)["outcome"] == "approved"
        pipeline.drain()
        completed = [e for e in pipeline.tapped_events() if e["detail-type"] == "ReviewCompleted"]
        assert [e["detail"]["data"]["reviewer"] for e in completed] == ["ana"]

        assert main(["reviews", "reject", event.id, "--queue-url", url]) == 1  # decided already: nothing left
        assert json.loads(capsys.readouterr().out)["outcome"] == "not-found"
