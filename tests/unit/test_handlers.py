"""The kit's handler factories: a function's environment is validated at init, its models found by name."""

from __future__ import annotations

import pytest
from inferbus_lambda.environment import ConsumerEnvironment, StepEnvironment
from inferbus_lambda.errors import ConfigurationError
from inferbus_lambda.handlers import Models, StepRuntime
from inferbus_lambda.inference import model_info

BASE = {"POWERTOOLS_SERVICE_NAME": "unit", "POWERTOOLS_METRICS_NAMESPACE": "Test"}
CONSUMER = BASE | {"EVENT_BUS_NAME": "bus", "RESULT_SOURCE": "inferbus.x", "CONSUMES": "In", "PRODUCES": "Out",
                   "IDEMPOTENCY_TABLE_NAME": "t", "IDEMPOTENCY_TTL_SECONDS": "60"}


def test_a_missing_or_malformed_variable_is_named_on_one_line():
    with pytest.raises(ConfigurationError) as raised:
        ConsumerEnvironment.from_environ(BASE | {"IDEMPOTENCY_TTL_SECONDS": "soon"})
    message = str(raised.value)
    assert "\n" not in message and message.startswith("unit: the function's environment is incomplete or wrong")
    for name in ("EVENT_BUS_NAME", "IDEMPOTENCY_TABLE_NAME", "IDEMPOTENCY_TTL_SECONDS", "CONSUMES", "PRODUCES"):
        assert name in message


def test_an_environment_round_trips_through_the_variables_the_stack_writes():
    environment = ConsumerEnvironment(**BASE, INFERBUS_MODELS=("a", "b"), EVENT_BUS_NAME="bus", RESULT_SOURCE="inferbus.x",
                                      CONSUMES="In", PRODUCES="Out", IDEMPOTENCY_TABLE_NAME="t", IDEMPOTENCY_TTL_SECONDS=60)
    variables = environment.as_variables()
    assert variables["INFERBUS_MODELS"] == "a,b" and "INVALID_EVENTS_QUEUE_URL" not in variables
    assert ConsumerEnvironment.from_environ(variables) == environment


def test_a_step_loads_its_declared_models_once_and_names_an_unknown_one(monkeypatch, tmp_path):
    from inferbus.local import HOST

    monkeypatch.setenv("LAMBDA_TASK_ROOT", str(HOST.task_root))
    loads = []
    runtime = StepRuntime(lambda event, rt: rt.models.only.name, load=lambda info: loads.append(info.name) or info,
                          environ=BASE | {"INFERBUS_MODELS": "digits-mlp"})
    assert runtime.handle({}, None) == "digits-mlp" and loads == ["digits-mlp"]
    assert model_info("digits-mlp").labels == list(range(10))
    with pytest.raises(ConfigurationError, match="model 'nope' is not in models/manifest.json"):
        StepRuntime(lambda e, r: None, environ=BASE | {"INFERBUS_MODELS": "nope"})
    with pytest.raises(ConfigurationError, match="loads 2 models"):
        Models({"a": 1, "b": 2}).only  # noqa: B018 - the property raises


def test_a_step_environment_ignores_what_lambda_adds():
    environment = StepEnvironment.from_environ(BASE | {"AWS_REGION": "eu-west-1", "AWS_LAMBDA_FUNCTION_NAME": "x"})
    assert environment.POWERTOOLS_SERVICE_NAME == "unit"


@pytest.mark.parametrize(("value", "read"), [("60", 60), (" 60 ", 60), ("1_000", 1000), ("+7", 7), ("60.0", 60), (60, 60)])
def test_an_integer_variable_reads_what_pydantic_read(value, read):
    environment = ConsumerEnvironment.from_environ(CONSUMER | {"IDEMPOTENCY_TTL_SECONDS": value})
    assert environment.IDEMPOTENCY_TTL_SECONDS == read


@pytest.mark.parametrize(("variables", "problem"), [
    ({"IDEMPOTENCY_TTL_SECONDS": "0"}, "IDEMPOTENCY_TTL_SECONDS: Input should be greater than or equal to 1"),
    ({"IDEMPOTENCY_TTL_SECONDS": "6e1"}, "IDEMPOTENCY_TTL_SECONDS: Input should be a valid integer, unable to parse"),
    ({"MAX_RECEIVE_COUNT": "-1"}, "MAX_RECEIVE_COUNT: Input should be greater than or equal to 1"),
    ({"EVENT_BUS_NAME": ""}, "EVENT_BUS_NAME: String should have at least 1 character"),
])
def test_a_malformed_variable_is_refused_with_its_reason(variables, problem):
    with pytest.raises(ConfigurationError, match=problem):
        ConsumerEnvironment.from_environ(CONSUMER | variables)


def test_unknown_variables_are_ignored_and_names_split_on_commas():
    environment = ConsumerEnvironment.from_environ(CONSUMER | {"INFERBUS_MODELS": " a, ,b ", "PATH": "/bin"})
    assert environment.INFERBUS_MODELS == ("a", "b") and environment.MAX_RECEIVE_COUNT is None
    assert "PATH" not in environment.as_variables() and "PATH" not in ConsumerEnvironment.variable_names()


def test_an_environment_made_in_code_is_checked_as_one_read_from_variables():
    """The stack builds environments in code: a bad value fails there, not at the function's first cold start."""
    with pytest.raises(ValueError, match="IDEMPOTENCY_TTL_SECONDS: Input should be greater than or equal to 1"):
        ConsumerEnvironment(**{**CONSUMER, "IDEMPOTENCY_TTL_SECONDS": 0})  # type: ignore[arg-type]
    with pytest.raises(AttributeError):  # frozen, as the pydantic model was
        ConsumerEnvironment.from_environ(CONSUMER).EVENT_BUS_NAME = "other"  # type: ignore[misc]
