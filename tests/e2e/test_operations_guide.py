"""docs/operations.md: every alarm the stack can raise is explained, and every `inferbus` command in it runs,
embedded, against a pipeline that has work in it (a case waiting for review, events in the archive)."""

from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from inferbus.cli import main
from inferbus.demo.inputs import demo_components, sample_events
from inferbus.local import LocalPipeline
from inferbus.model.names import DEAD_LETTER_QUEUE_URL
from inferbus.reviews import list_reviews
from infra.constructs.consumer_monitoring import CONSUMER_ALARMS, INSIGHTS_ALARMS, ROUTE_ALARMS, UNROUTED_CHECK_ALARMS
from infra.constructs.ingest_api import INGEST_ALARMS
from infra.constructs.workflow_monitoring import WORKFLOW_ALARMS
from tests.declared import DEMO, PIPELINE
from tests.infra.test_template import of_type

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
TEXT = GUIDE.read_text()
HASH = re.compile(r"[0-9A-F]{8}$")
SAMPLES_EACH = 3


def guide_commands() -> list[str]:
    """The `inferbus` command lines of the guide's bash blocks, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", TEXT, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip().startswith("inferbus ")]


def test_every_alarm_is_explained(template):
    documented = set(re.findall(r"`(?:<[A-Za-z]+>Monitoring |[A-Za-z]+ )?([A-Za-z]+)(?:…)?`", TEXT))
    # the opt-in AWS FIS experiments' stop conditions (tests/infra checks their template)
    for name in (*CONSUMER_ALARMS, *WORKFLOW_ALARMS, *ROUTE_ALARMS, *UNROUTED_CHECK_ALARMS, *INGEST_ALARMS, *INSIGHTS_ALARMS,
                 "FaultInjectionWorkLost"):
        assert name in documented, name
    for logical_id in of_type(template, "AWS::CloudWatch::Alarm"):
        bare = HASH.sub("", logical_id)
        assert any(bare.endswith(name) for name in documented), logical_id


def test_the_guide_has_commands_for_redrive_replay_and_reviews():
    verbs = {shlex.split(command)[1] for command in guide_commands()}
    assert {"redrive", "replay", "reviews", "send"} <= verbs


@pytest.fixture(scope="module")
def variables(template):
    with LocalPipeline(template) as pipeline:
        since = datetime.now(UTC) - timedelta(seconds=1)
        entries = []
        from inferbus_lambda.contracts import to_put_events_entry

        for component in demo_components(PIPELINE):
            entries += [to_put_events_entry(event, pipeline.bus_name)
                        for event, _ in sample_events(component, min(SAMPLES_EACH, DEMO[component.name].limit))]
        pipeline.put_events(entries)
        pipeline.drain()
        values = {"BUS": pipeline.bus_name, "INVALID_EVENTS_URL": pipeline.invalid_events_url,
                  "DLQ_URL": pipeline.outputs[PIPELINE.consumers[0].output_key(DEAD_LETTER_QUEUE_URL)],
                  "SINCE": since.isoformat(), "UNTIL": datetime.now(UTC).isoformat()}
        reviewed = [w for w in PIPELINE.workflows if w.review_queue]
        if reviewed:
            values["REVIEW_QUEUE_URL"] = pipeline.review_queue_url(reviewed[0].name)
            waiting = list_reviews(pipeline.sqs, values["REVIEW_QUEUE_URL"])
            assert waiting, f"no case of {SAMPLES_EACH} samples each waits for review: send more"
            values["TXN_ID"] = waiting[0].transaction_id
        yield pipeline, values


@pytest.mark.parametrize("command", guide_commands())
def test_each_command_runs_embedded(variables, command, capsys):
    pipeline, values = variables
    used = set(re.findall(r"\$\{?([A-Z_]+)\}?", command))
    if not used <= set(values):
        pytest.skip(f"this pipeline has nothing for {sorted(used - set(values))}")
    line = re.sub(r"\$\{?([A-Z_]+)\}?", lambda match: values[match.group(1)], command)
    assert main(shlex.split(line)[1:]) == 0, capsys.readouterr().err
    pipeline.drain()
    assert "Traceback" not in capsys.readouterr().err
