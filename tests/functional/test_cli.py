import json

import boto3
import pytest
from moto import mock_aws

from inferbus.cli import main
from inferbus.demo.inputs import input_type
from tests.declared import DEMO, PIPELINE

DEMO_COMPONENTS = [c for c in PIPELINE.producers if c.name in DEMO]


@pytest.mark.parametrize("component", DEMO_COMPONENTS, ids=[c.name for c in DEMO_COMPONENTS])
def test_send_puts_one_held_out_sample_of_each_component(capsys, component):
    with mock_aws():
        boto3.client("events", region_name="us-east-1").create_event_bus(Name="inferbus")
        index = str(min(3, DEMO[component.name].limit - 1))
        assert main(["send", "--bus", "inferbus", "--sample", component.name, "--index", index]) == 0
    (sent,) = json.loads(capsys.readouterr().out)["sent"]
    assert sent["type"] == input_type(component) and sent["id"]


def test_demo_rejects_a_count_out_of_range_naming_it(capsys):
    component = DEMO_COMPONENTS[0]
    assert main(["demo", "--count", f"{component.name}={DEMO[component.name].limit + 1}"]) == 2
    assert f"--count {component.name}={DEMO[component.name].limit + 1}: must be in [0, {DEMO[component.name].limit}]" in capsys.readouterr().err
    assert main(["demo", "--count", "no-such-component=1"]) == 2
    assert "no demo inputs for ['no-such-component']" in capsys.readouterr().err


def test_latency_histogram_counts_every_value_once():
    from inferbus.demo.summary import latency_histogram

    rows = latency_histogram([1.0, 2.0, 2.5, 9.0, 10.0], bins=3, width=10)
    assert [int(row.rsplit(" ", 1)[1]) for row in rows] == [3, 0, 2]
    assert rows[0].count("█") == 10 and rows[2].count("█") == 7


def test_send_puts_an_event_of_any_registered_type(capsys):
    with mock_aws():
        boto3.client("events", region_name="us-east-1").create_event_bus(Name="inferbus")
        assert main(["send", "--bus", "inferbus", "--type", "TextSubmitted", "--data", '{"text": "Lovely weather."}']) == 0
    (sent,) = json.loads(capsys.readouterr().out)["sent"]
    assert sent["type"] == "TextSubmitted" and sent["id"]


def test_send_refuses_an_event_that_breaks_its_contract_or_an_unknown_type(capsys):
    assert main(["send", "--bus", "inferbus", "--type", "TextSubmitted", "--data", '{"text": "   "}']) == 2
    assert "text must not be blank" in capsys.readouterr().err
    assert main(["send", "--bus", "inferbus", "--type", "Teleported"]) == 2
    assert "no contract defines 'Teleported'" in capsys.readouterr().err
    assert main(["send", "--bus", "inferbus", "--sample", "no-such-component"]) == 2
    assert "no component named 'no-such-component'" in capsys.readouterr().err


def test_reviews_list_and_approve_resume_the_waiting_workflow(template, capsys):
    import numpy as np
    from inferbus_lambda.contracts import Customer, TransactionSubmitted, new_event, to_put_events_entry

    from inferbus.local import LocalPipeline
    from pipeline._held_out import TRANSACTIONS as RISK_HOLDOUT

    risky = [float(v) for v in np.load(RISK_HOLDOUT)["features"][1]]  # held-out row 1: risk 1.0
    with LocalPipeline(template) as pipeline:
        event = new_event(TransactionSubmitted(customer=Customer(id="c-1", segment="new"), features=risky), source="cli.test")
        pipeline.put_events([to_put_events_entry(event, pipeline.bus_name)])
        pipeline.drain()
        url = pipeline.review_queue_url("risk-review")

        assert main(["reviews", "list", "--queue-url", url]) == 0
        listing = capsys.readouterr().out
        assert "1 cases waiting for review" in listing and event.id in listing.splitlines()  # whole, to copy

        assert main(["reviews", "approve", event.id, "--queue-url", url, "--reviewer", "ana", "--note", "ok"]) == 0
        assert capsys.readouterr().out == f"{event.id}: approved; its workflow resumes and emits ReviewCompleted\n"
        pipeline.drain()
        completed = [e for e in pipeline.tapped_events() if e["detail-type"] == "ReviewCompleted"]
        assert [e["detail"]["data"]["reviewer"] for e in completed] == ["ana"]

        # Decided already, nothing left: a failure is one line on stderr (exit 1), and stdout stays empty.
        assert main(["reviews", "reject", event.id, "--queue-url", url]) == 1
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1
        assert err.startswith(f"inferbus reviews reject: {event.id}: not-found") and "inferbus reviews list" in err
        assert main(["reviews", "reject", event.id, "--queue-url", url, "--json"]) == 1  # --json: the same, as JSON
        assert json.loads(capsys.readouterr().out)["outcome"] == "not-found"


RULE_EVENT = {"id": "1", "account": "123456789012", "source": "my.producer", "time": "2026-12-02T10:00:00Z",
              "region": "us-east-1", "resources": [], "detail-type": "ImageSubmitted", "detail": {"data": {"analysis": []}}}


def test_rules_test_answers_as_eventbridge_would(capsys, tmp_path):
    from tests.pattern_cases import CASES

    pattern = {"detail": {"data": {"$or": [{"analysis": [{"exists": False}]}, {"analysis": ["classify"]}]}}}
    assert main(["rules", "test", json.dumps(pattern), json.dumps(RULE_EVENT)]) == 0  # [] has no leaf: AWS matches
    assert capsys.readouterr().out.strip() == "match"
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps(RULE_EVENT | {"detail": {"n": True}}))
    assert main(["rules", "test", '{"detail": {"n": [1]}}', str(event_file), "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {"Result": False}
    disputed = next(case for case in CASES if case.name == "[1] does not match true")
    assert disputed.matches is False


def test_rules_test_refuses_an_invalid_pattern_or_event_in_one_line(capsys):
    assert main(["rules", "test", '{"source": []}', json.dumps(RULE_EVENT)]) == 2
    assert capsys.readouterr().err.strip() == ("inferbus rules test: EventBridge would refuse this pattern: source: empty "
                                               "arrays are not allowed")
    assert main(["rules", "test", '{"source": ["a"]}', '{"detail": {}}']) == 2
    assert "the event lacks id, account, source, time, region, resources, detail-type" in capsys.readouterr().err
    assert main(["rules", "test", "{nope", json.dumps(RULE_EVENT)]) == 2
    assert "not JSON" in capsys.readouterr().err
