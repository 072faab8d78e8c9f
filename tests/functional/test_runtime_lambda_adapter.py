"""The one Lambda adapter (tied to moto 5.2.5's Step Functions interpreter using boto3's default
session), tested directly: if moto changes how it invokes Lambda, these fail first."""

from __future__ import annotations

import json
import threading
import time

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.runtime_fixtures import runtime
from inferbus.runtime.lambda_adapter import function_name_of
from tests.runtime_fixtures import templates as t


@pytest.fixture(scope="module")
def pipeline():
    template = t.template(Echo=t.function("echo", tag="echo"), Other=t.function("echo", tag="other"),
                          Flaky=t.function("flaky", FAIL_TIMES="1"), Broken=t.function("broken"))
    with runtime(template, tap=False) as running:
        yield running


def invoke(function_name: str, payload: object, **kwargs: str) -> dict:
    # boto3.client(...) is exactly how moto's interpreter makes its Lambda client.
    return boto3.client("lambda").invoke(FunctionName=function_name, Payload=json.dumps(payload), **kwargs)


def test_invoke_runs_the_handler_and_returns_its_result(pipeline):
    spec = pipeline.functions["Echo"].spec
    for name in (spec.name, spec.arn, f"{spec.arn}:$LATEST", f"123456789012:function:{spec.name}"):
        response = invoke(name, {"n": 1})
        assert response["StatusCode"] == 200 and "FunctionError" not in response
        assert json.load(response["Payload"]) == {"echo": {"n": 1}, "tag": "echo"}


def test_an_unhandled_error_is_reported_as_lambda_reports_it(pipeline):
    response = invoke(pipeline.functions["Broken"].spec.arn, {})
    assert response["StatusCode"] == 200 and response["FunctionError"] == "Unhandled"
    payload = json.load(response["Payload"])
    assert payload["errorType"] == "ValueError" and payload["errorMessage"] == "broken on purpose"
    assert any("broken.py" in line for line in payload["stackTrace"])
    custom = json.load(invoke(pipeline.functions["Flaky"].spec.arn, {"key": "direct"})["Payload"])
    assert custom["errorType"] == "TransientError"  # the class name: what Retry/Catch match on
    logged = pipeline.functions["Broken"].logs[-1]
    assert logged["errorType"] == "ValueError" and logged["level"] == "ERROR"


def test_a_function_the_template_does_not_declare_falls_through_to_moto(pipeline):
    with pytest.raises(ClientError) as raised:
        invoke("not-in-the-template", {})
    assert raised.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_event_and_dry_run_invocations(pipeline):
    before = len(pipeline.functions["Other"].invocations)
    assert invoke(pipeline.functions["Other"].spec.name, {}, InvocationType="Event")["StatusCode"] == 202
    assert invoke(pipeline.functions["Other"].spec.name, {}, InvocationType="DryRun")["StatusCode"] == 204
    assert len(pipeline.functions["Other"].invocations) == before + 1


def test_a_handler_invoking_another_function_does_not_deadlock(pipeline):
    result = json.load(invoke(pipeline.functions["Echo"].spec.name, {"call": pipeline.functions["Other"].spec.name})["Payload"])
    assert result == {"called": {"echo": {"from": pipeline.functions["Echo"].spec.name}, "tag": "other"}, "tag": "echo"}


def test_invocations_run_at_once_each_in_its_own_environment(pipeline):
    """No global lock: four sleeping invocations of two functions overlap, and each sees its own
    function's environment and keeps its own logs while the others run."""
    echo, other = pipeline.functions["Echo"], pipeline.functions["Other"]
    results: list[tuple[str, float, float, dict]] = []

    def call(function):
        began = time.perf_counter()
        response, invocation = function.invoke({"sleep_s": 0.5}, trigger="invoke")
        results.append((function.spec.name, began, time.perf_counter(), response | {"logs": invocation.logs}))

    peak = {"all": 0}
    done = threading.Event()

    def sample() -> None:  # how many invocations run at the same moment
        while not done.is_set():
            peak["all"] = max(peak["all"], echo.running + other.running)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    threads = [threading.Thread(target=call, args=(function,)) for function in (echo, other, echo, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    assert peak["all"] >= 3  # one at a time would never show more than one
    for name, _, _, response in results:
        assert response["tag"] == ("echo" if name == echo.spec.name else "other")
        assert [line["function"] for line in response["logs"] if line.get("message") == "echo"] == [name]
    assert echo.max_environments == 4 and len(echo._idle) >= 2  # two environments of Echo ran side by side


def test_function_name_of_request_paths():
    assert function_name_of("/2015-03-31/functions/my-fn%3Aprod/invocations") == "my-fn"
