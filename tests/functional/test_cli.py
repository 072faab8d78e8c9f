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
