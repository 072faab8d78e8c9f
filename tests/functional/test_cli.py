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
    assert "--images must be in [1, 360]" in capsys.readouterr().err


def test_latency_histogram_counts_every_value_once():
    from inferbus.cli import latency_histogram

    rows = latency_histogram([1.0, 2.0, 2.5, 9.0, 10.0], bins=3, width=10)
    assert [int(row.rsplit(" ", 1)[1]) for row in rows] == [3, 0, 2]
    assert rows[0].count("█") == 10 and rows[2].count("█") == 7
