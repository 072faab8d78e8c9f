"""Every error a person meets is one line on stderr saying what to do, with a non-zero exit; never a traceback.

Each case runs the real CLI (``inferbus.cli.main``) the way a new user would get it wrong.
"""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from inferbus import cli
from inferbus.cli import main
from tests.declared import PIPELINE

EVENT = {"specversion": "1.0", "id": "txt-1", "source": "my.producer", "type": "TextSubmitted",
         "time": "2026-12-02T10:00:00Z", "correlationid": "req-1", "data": {"text": "The parcel arrived late."}}
MISSING_QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/no-such-queue"


@pytest.fixture
def no_aws_configuration(monkeypatch, tmp_path):
    """A machine with no region, no credentials and empty AWS config files."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
                 "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        empty = tmp_path / name.lower()
        empty.write_text("")
        monkeypatch.setenv(name, str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_no_region(no_aws_configuration, capsys):
    assert main(["send", "--bus", "inferbus", "--type", "TextSubmitted", "--data", '{"text": "Hi"}']) == 2
    assert one_line(capsys) == ("inferbus send: no AWS region: pass --region (or set AWS_REGION, or a region in your "
                                "profile)")


def test_no_credentials(no_aws_configuration, capsys):
    assert main(["redrive", MISSING_QUEUE, "--region", "eu-west-1", "--dry-run"]) == 2
    assert "no AWS credentials: run `aws configure`" in one_line(capsys)


def test_an_unknown_profile(no_aws_configuration, capsys):
    assert main(["reviews", "list", "--queue-url", MISSING_QUEUE, "--profile", "nobody"]) == 2
    line = one_line(capsys)
    assert line.startswith("inferbus reviews list: The config profile (nobody) could not be found")
    assert "aws configure list-profiles" in line


@mock_aws
def test_a_queue_that_does_not_exist(capsys):
    assert main(["redrive", MISSING_QUEUE, "--dry-run"]) == 2
    assert "no such queue" in one_line(capsys)


@mock_aws
def test_a_bus_that_does_not_exist(capsys):
    assert main(["send", "--bus", "no-such-bus", "--type", "TextSubmitted", "--data", '{"text": "Hi"}']) == 2
    line = one_line(capsys)
    assert line.startswith("inferbus send: PutEvents: Event bus no-such-bus does not exist.")
    assert "check the name (stack outputs)" in line


def test_no_network(monkeypatch, capsys):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    assert main(["send", "--bus", "inferbus", "--endpoint-url", "http://127.0.0.1:9", "--type", "TextSubmitted",
                 "--data", '{"text": "Hi"}']) == 1
    assert "cannot reach AWS (Could not connect to the endpoint URL" in one_line(capsys)


def test_an_event_file_that_is_missing_or_broken(tmp_path, capsys):
    assert main(["send", "--bus", "inferbus", "--event", str(tmp_path / "nope.json")]) == 2
    assert one_line(capsys).endswith("nope.json: No such file or directory")
    broken = tmp_path / "events.jsonl"
    broken.write_text(json.dumps(EVENT) + "\n{not json\n")
    assert main(["send", "--bus", "inferbus", "--event", str(broken)]) == 2
    assert "events.jsonl line 2: not JSON" in one_line(capsys)
    blank = dict(EVENT, data={"text": "   "})
    broken.write_text(json.dumps(EVENT) + "\n" + json.dumps(blank) + "\n")
    assert main(["send", "--bus", "inferbus", "--event", str(broken)]) == 2
    assert "events.jsonl line 2: not sent, it breaks its contract: event txt-1: data.text" in one_line(capsys)



@pytest.mark.parametrize(("content", "reason"), [
    ("[" * 100_000 + "]" * 100_000, ": JSON nested too deeply to parse; nothing was sent"),
    (json.dumps(EVENT) + '\n{"n": 1' + "0" * 5000 + "}\n", " line 2: not valid JSON (a number too long to read"),
])
def test_an_event_file_python_cannot_read_is_one_line_not_a_crash(tmp_path, capsys, content, reason):
    path = tmp_path / "events.json"
    path.write_text(content)
    assert main(["send", "--bus", "inferbus", "--event", str(path)]) == 2
    assert one_line(capsys).startswith(f"inferbus send: {path}{reason}")


@pytest.mark.parametrize(("argv", "expected"), [
    (["send", "--bus", "inferbus"], "one of the arguments --event --sample --type is required"),
    (["demo", "--count", "text-pipeline=lots"], "expected COMPONENT=N"),
    (["replay", "--since", "yesterday", "--until", "2026-12-01T10:00"], "expected an ISO 8601 time"),
    (["no-such-command"], "invalid choice: 'no-such-command'"),
    (["chaos", "--rate", "0"], "max_events_per_second must be in (0, 100000]"),
    (["chaos", "--rate", "fast"], "expected events per second, got 'fast'"),
    (["serve", "--retention", "soon"], "expected seconds or a number with s, m, h or d"),
    (["serve", "--retention", "0m"], "must be at least 1 s"),
])
def test_a_wrong_command_line(argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    line = one_line(capsys)
    assert expected in line and line.endswith("--help)")


@pytest.mark.parametrize(("given", "seconds"), [("90", 90), ("90s", 90), ("15m", 900), ("1h", 3600), ("45d", 3_888_000)])
def test_serve_reads_a_retention_in_seconds_or_with_a_unit(given, seconds):
    assert cli.build_parser().parse_args(["serve", "--retention", given]).retention == seconds


@mock_aws
def test_a_replay_window_that_is_backwards(capsys):
    boto3.client("events", region_name="us-east-1").create_event_bus(Name="inferbus")
    assert main(["replay", "--since", "2026-12-01T11:00", "--until", "2026-12-01T10:00"]) == 2
    assert "must be before --until" in one_line(capsys)


def test_an_unknown_event_type_for_schemas(capsys):
    assert main(["schemas", "Teleported"]) == 2
    assert one_line(capsys).startswith("inferbus schemas: no contract defines Teleported; known: ")


def test_a_bug_is_one_line_that_says_so_and_debug_shows_the_traceback(monkeypatch, capsys):
    def broken(args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(cli, "_schemas", broken)
    assert main(["schemas"]) == 1
    line = one_line(capsys)
    assert line.startswith("inferbus schemas: unexpected ZeroDivisionError at test_cli_errors.py:")
    assert "run again with --debug for the traceback" in line
    with pytest.raises(ZeroDivisionError):
        main(["schemas", "--debug"])


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("inferbus ")
    for command in ("send", "redrive", "replay", "reviews", "demo", "chaos", "schemas", "diagram", "docs"):
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0
        out = capsys.readouterr().out
        talks_to_aws = command in ("send", "redrive", "replay")
        assert ("--endpoint-url" in out) is talks_to_aws, command


@mock_aws
def test_send_validates_every_event_of_a_json_lines_file_then_sends_them_all(tmp_path, capsys):
    boto3.client("events", region_name="us-east-1").create_event_bus(Name="inferbus")
    lines = [dict(EVENT, id=f"txt-{n}") for n in range(12)]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert main(["send", "--bus", "inferbus", "--event", str(path)]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [sent["id"] for sent in answer["sent"]] == [line["id"] for line in lines] and answer["failed"] == []


@mock_aws
def test_send_reads_one_event_from_stdin(monkeypatch, capsys):
    import io

    boto3.client("events", region_name="us-east-1").create_event_bus(Name="inferbus")
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(EVENT, indent=2)))
    assert main(["send", "--bus", "inferbus", "--event", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["sent"] == [{"id": "txt-1", "type": "TextSubmitted", "true_answer": None}]


@mock_aws
def test_json_output_is_strict_json(capsys):
    sqs = boto3.client("sqs", region_name="us-east-1")
    dlq = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sqs.create_queue(QueueName="work", Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": arn,
                                                                                "maxReceiveCount": 3})})
    sqs.send_message(QueueUrl=dlq, MessageBody="not an event")
    assert main(["redrive", dlq, "--dry-run", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert answer["would_move"] == 0 and answer["messages"][0]["verdict"].startswith("would fail again")
    assert main(["reviews", "list", "--queue-url", dlq, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["problem"].startswith("not a review request")


def test_json_safe_replaces_what_json_cannot_hold():
    from inferbus.cli_support import json_safe

    assert json_safe({"p50": float("nan"), "rows": [float("inf"), 1.5]}) == {"p50": None, "rows": [None, 1.5]}


def test_schemas_prints_one_type_and_checks_the_folder(capsys):
    assert main(["schemas", "TextSubmitted"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "TextSubmitted"
    assert main(["schemas", "--check"]) == 0
    assert "are current" in capsys.readouterr().out


def test_progress_is_a_line_per_stage_when_stderr_is_not_a_terminal(capsys):
    from inferbus.cli_support import progress_reporter

    def run(progress):
        for done in range(3):
            progress("send", done + 1, 3)
        progress("drain", 1, 1)
        return "done"

    assert progress_reporter("inferbus demo", run) == "done"
    assert capsys.readouterr().err.splitlines() == ["inferbus demo: send …", "inferbus demo: send done (3/3)",
                                                    "inferbus demo: drain …", "inferbus demo: drain done (1/1)"]



def test_aws_region_is_read_as_the_aws_cli_reads_it(no_aws_configuration, monkeypatch, capsys):
    """AWS_REGION (the AWS CLI's and the SDKs' variable) is a region: the next thing missing is credentials."""
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert main(["reviews", "list", "--queue-url", MISSING_QUEUE]) == 2
    assert "no AWS credentials" in one_line(capsys)


def test_debug_before_the_command_shows_the_traceback(no_aws_configuration):
    from botocore.exceptions import NoRegionError

    for argv in (["--debug", "reviews", "list", "--queue-url", MISSING_QUEUE],
                 ["reviews", "list", "--queue-url", MISSING_QUEUE, "--debug"]):
        with pytest.raises(NoRegionError):
            main(argv)


@pytest.mark.parametrize("url", ["localhost:4566", "127.0.0.1:4566", "ftp://localhost:4566", "http://"])
def test_an_endpoint_url_without_its_scheme_is_a_usage_error(url, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["reviews", "list", "--queue-url", MISSING_QUEUE, "--region", "us-east-1", "--endpoint-url", url])
    assert exit_.value.code == 2
    line = one_line(capsys)
    assert "--endpoint-url" in line and "expected a URL with its scheme, such as http://" in line


@pytest.mark.parametrize("argv", [["serve", "--template", "no/such/template.json"],
                                  ["rules", "test", "no-such-pattern.json", "{}"],
                                  ["rules", "test", "@no-such-pattern.json", "{}"]])
def test_a_missing_file_is_named_as_missing_not_as_bad_json(argv, capsys):
    assert main(argv) == 2
    line = one_line(capsys)
    assert "no such file" in line and "no" in line.split(": ")[1] and "JSON" in line.split("no such file")[1]


CTRL_C_AFTER_SYNTH = """
import os, signal, sys, time
from inferbus.cli_support import ignore_interrupted_jsii
if sys.argv[1] == "cli":
    ignore_interrupted_jsii()
import constructs  # starts jsii's node process, as a synth does
signal.signal(signal.SIGINT, signal.SIG_IGN)
os.killpg(0, signal.SIGINT)  # Ctrl-C: the terminal signals the whole process group, node included
time.sleep(0.5)
"""


def test_ctrl_c_after_a_synth_ends_without_a_traceback():
    """Without the CLI's hook, jsii's exit hook writes to the node process Ctrl-C stopped: a BrokenPipeError."""
    import subprocess
    import sys

    def stderr(mode: str) -> str:
        return subprocess.run([sys.executable, "-c", CTRL_C_AFTER_SYNTH, mode], capture_output=True, text=True,
                              start_new_session=True, timeout=120, check=True).stderr

    assert "BrokenPipeError" in stderr("bare")  # the failure the hook is for still happens without it
    assert "Traceback" not in stderr("cli")
