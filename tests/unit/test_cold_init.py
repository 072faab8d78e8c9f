"""What a function imports and builds at its cold init: only what it uses (issue 21).

Each declared function (every consumer, the workflows' Accept step, every workflow task) is imported
in a fresh interpreter with the environment the stack gives it, then the probe reads ``sys.modules``
and which event contract models have a validator built. Structural facts, no timing: the timings are
``bench/speed.py --cold``'s, beside their baseline.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from inferbus_lambda.environment import AcceptEnvironment, ConsumerEnvironment, FunctionEnvironment, StepEnvironment

from tests.declared import PIPELINE

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ROOT / "functions"
ACCEPT_HANDLER = "accept_event.handler.lambda_handler"  # the kit's first step of every workflow
# What only a consumer (or the Accept step, which claims) needs: a workflow task must not pay for it.
CONSUMER_MACHINERY = ("inferbus_lambda.claims", "inferbus_lambda.consumer", "inferbus_lambda.sources",
                      "inferbus_lambda.publishing", "inferbus_lambda.rejections")

PROBE = """
import importlib, json, sys
target = sys.argv[1]
if target == "ad-hoc step":  # a step of your own, no models: the kit alone
    from inferbus_lambda.handlers import step_handler
    handler = step_handler(lambda event, runtime: event)
else:
    module, _, attribute = target.rpartition(".")
    handler = getattr(importlib.import_module(module), attribute)
modules = sorted(sys.modules)  # before the probe imports pydantic itself
from pydantic import BaseModel
from inferbus_lambda.contracts.core import CloudEvent, EventData

def ours(cls):
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("inferbus_lambda."):
            yield sub
        yield from ours(sub)

print(json.dumps({
    "modules": modules,
    "events_built": sorted({cls.__qualname__ for base in (EventData, CloudEvent) for cls in [base, *ours(base)]
                            if cls.__pydantic_complete__}),
    "opens_onnx": any(hasattr(model, "session") for model in handler.runtime.models.values()),
}))
"""


def declared_functions() -> dict[str, tuple[str, FunctionEnvironment]]:
    """Every function of the declared pipeline: its handler and the environment the stack sets (as in
    ``infra/stack.py``; tokens as placeholders)."""
    def common(service: str, models: tuple[str, ...]) -> dict[str, Any]:
        return {"POWERTOOLS_SERVICE_NAME": service, "POWERTOOLS_METRICS_NAMESPACE": "Inferbus", "INFERBUS_MODELS": models}

    claims = {"IDEMPOTENCY_TABLE_NAME": "claims", "IDEMPOTENCY_TTL_SECONDS": 3600}
    found: dict[str, tuple[str, FunctionEnvironment]] = {}
    for consumer in PIPELINE.consumers:
        found[consumer.name] = (consumer.handler, ConsumerEnvironment(
            **common(consumer.name, consumer.models), **claims, EVENT_BUS_NAME="bus",
            RESULT_SOURCE=consumer.result_source, CONSUMES=consumer.accepts.type, PRODUCES=consumer.result_type,
            INVALID_EVENTS_QUEUE_URL="https://sqs.us-east-1.amazonaws.com/123456789012/invalid"))
    if PIPELINE.workflows:
        found["accept"] = (ACCEPT_HANDLER, AcceptEnvironment(**common("accept", ()), **claims))
    for workflow in PIPELINE.workflows:
        for stem, task in workflow.tasks.items():
            service = workflow.task_service(stem)
            found[service] = (task.handler, StepEnvironment(**common(service, task.models)))
    return found


FUNCTIONS_DECLARED = declared_functions()
TASKS = [name for name, (handler, environment) in FUNCTIONS_DECLARED.items() if type(environment) is StepEnvironment]


@cache
def probe(name: str) -> dict[str, Any]:
    """What the function ``name`` (or ``"ad-hoc step"``) imported and built, in a fresh interpreter."""
    handler, environment = FUNCTIONS_DECLARED.get(name, ("ad-hoc step", StepEnvironment(
        POWERTOOLS_SERVICE_NAME="ad-hoc", POWERTOOLS_METRICS_NAMESPACE="Inferbus")))
    env = {**os.environ, **environment.as_variables(), "PYTHONPATH": str(FUNCTIONS), "LAMBDA_TASK_ROOT": str(ROOT),
           "POWERTOOLS_TRACE_DISABLED": "true"}
    answer = subprocess.run([sys.executable, "-c", PROBE, handler], env=env, capture_output=True, text=True, check=False)
    assert answer.returncode == 0, answer.stderr[-2000:]
    return json.loads(answer.stdout.strip().splitlines()[-1])


def handler_imports_numpy(handler: str) -> bool:
    """Whether the handler's own module imports numpy (then numpy is the function's, not the kit's)."""
    path = FUNCTIONS.joinpath(*handler.rpartition(".")[0].split(".")).with_suffix(".py")
    tree = ast.parse(path.read_text())
    return any(alias.name.partition(".")[0] == "numpy" for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names) or any(
        isinstance(node, ast.ImportFrom) and (node.module or "").partition(".")[0] == "numpy" for node in ast.walk(tree))


@pytest.mark.parametrize("name", [*TASKS, "ad-hoc step"])
def test_a_workflow_task_does_not_import_the_consumers_machinery(name):
    loaded = set(probe(name)["modules"])
    assert not loaded.intersection(CONSUMER_MACHINERY), f"{name} imports {sorted(loaded & set(CONSUMER_MACHINERY))}"


@pytest.mark.parametrize("name", [*TASKS, "ad-hoc step"])
def test_a_workflow_task_makes_only_its_own_environment_model(name):
    """The consumers', Accept's and the bus functions' environment models are not made by a step."""
    loaded = set(probe(name)["modules"])
    assert "inferbus_lambda.environment.base" in loaded
    assert not loaded & {"inferbus_lambda.environment.claims", "inferbus_lambda.environment.bus"}


@pytest.mark.skipif(ACCEPT_HANDLER not in {handler for handler, _ in FUNCTIONS_DECLARED.values()}, reason="no workflow")
def test_the_accept_step_imports_the_claims_store_and_nothing_else_of_a_consumer():
    """It claims event ids, but runs no batch: the consumer, its record sources, publishing and rejections are not its."""
    loaded = set(probe("accept")["modules"])
    assert "inferbus_lambda.claims" in loaded
    assert not loaded.intersection(set(CONSUMER_MACHINERY) - {"inferbus_lambda.claims"})


@pytest.mark.parametrize("name", [*FUNCTIONS_DECLARED, "ad-hoc step"])
def test_a_function_that_opens_no_onnx_model_does_not_import_numpy(name):
    handler = FUNCTIONS_DECLARED.get(name, ("ad-hoc step",))[0]
    found = probe(name)
    if found["opens_onnx"] or (handler != "ad-hoc step" and handler_imports_numpy(handler)):
        pytest.skip(f"{name} opens an ONNX model or imports numpy itself: numpy is its own")
    assert "numpy" not in found["modules"]
    assert "onnxruntime" not in found["modules"]


@pytest.mark.parametrize("name", [*FUNCTIONS_DECLARED, "ad-hoc step"])
def test_no_event_contract_is_built_at_init(name):
    """An event's data model and its envelope are built when the first event is validated (defer_build)."""
    built = probe(name)["events_built"]
    assert built == [], f"{name} builds {built} at init"


def handler_imports_contracts(handler: str) -> bool:
    """Whether the handler's own module imports the event contracts or pydantic (then pydantic is its own)."""
    path = FUNCTIONS.joinpath(*handler.rpartition(".")[0].split(".")).with_suffix(".py")
    imported = {alias.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ImportFrom)}
    return any(name.partition(".")[0] == "pydantic" or name.startswith("inferbus_lambda.contracts") for name in imported)


@pytest.mark.parametrize("name", [*TASKS, "ad-hoc step"])
def test_a_step_that_validates_no_contract_at_init_does_not_import_pydantic(name):
    """The environment is checked without pydantic, and the kit's own contracts (a model's ``ref``, the
    merge's branch scores) are imported on first use: a step pays for pydantic only if its own code asks."""
    handler = FUNCTIONS_DECLARED.get(name, ("ad-hoc step",))[0]
    if handler != "ad-hoc step" and handler_imports_contracts(handler):
        pytest.skip(f"{name}'s own module imports the contracts: pydantic is its own")
    found = probe(name)
    assert not [module for module in found["modules"] if module.partition(".")[0] in {"pydantic", "pydantic_core"}]


def contract_domain_of(name: str) -> str:
    """The contracts module that defines ``name`` (one of the package's names)."""
    from inferbus_lambda import contracts

    return f"inferbus_lambda.contracts.{contracts._DOMAIN_OF.get(name, 'core')}"


def contract_domains_imported(handler: str) -> set[str]:
    """The contracts modules the handler's own module imports: the domain of each name it takes from the
    package (``from inferbus_lambda.contracts import TextSubmitted``), and each module it names itself
    (``from inferbus_lambda.contracts.orders import OrderChecked``, as a scaffolded step does: a component's
    own contracts are not in the package's map, which is the kit's file)."""
    path = FUNCTIONS.joinpath(*handler.rpartition(".")[0].split(".")).with_suffix(".py")
    domains: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "inferbus_lambda.contracts":
            domains |= {contract_domain_of(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("inferbus_lambda.contracts."):
            domains.add(str(node.module))
        elif isinstance(node, ast.Import):
            domains |= {alias.name for alias in node.names if alias.name.startswith("inferbus_lambda.contracts.")}
    return domains


@pytest.mark.parametrize("name", [*FUNCTIONS_DECLARED, "ad-hoc step"])
def test_a_function_imports_only_the_contract_domains_it_uses(name):
    """The domains (``contracts/images.py``, ``text.py``, ...) a function's init imports are the ones
    defining what its module imports, and for a consumer the types it consumes and produces."""
    from inferbus_lambda.contracts import data_model

    handler, environment = FUNCTIONS_DECLARED.get(name, ("ad-hoc step", None))
    used = contract_domains_imported(handler) if environment else set()
    if isinstance(environment, ConsumerEnvironment):
        used |= {data_model(environment.CONSUMES).__module__, data_model(environment.PRODUCES).__module__}
    loaded = {module for module in probe(name)["modules"] if module.startswith("inferbus_lambda.contracts.")}
    assert loaded - {"inferbus_lambda.contracts.core"} == used - {"inferbus_lambda.contracts.core"}


def test_the_contracts_package_names_each_domain_name_where_it_is_defined():
    """The package's lazy map and its type-checking imports list the same names, each defined in its module."""
    from inferbus_lambda import contracts

    tree = ast.parse(Path(contracts.__file__).read_text())
    type_checked = {alias.name: inner.module for node in tree.body if isinstance(node, ast.If)
                    for inner in node.body if isinstance(inner, ast.ImportFrom) for alias in inner.names}
    assert contracts._DOMAIN_OF == type_checked
    for name, module in contracts._DOMAIN_OF.items():
        assert getattr(contracts, name) is vars(importlib.import_module(f"inferbus_lambda.contracts.{module}"))[name]
        assert name in contracts.__all__


GC_PROBE = """
import gc, importlib, json, sys
collections = lambda: sum(generation["collections"] for generation in gc.get_stats())
import inferbus_lambda  # the kit's first import, as any handler's (what the interpreter did before is not its)
before = collections()
module, _, attribute = sys.argv[1].rpartition(".")
handler = getattr(importlib.import_module(module), attribute)
after_init = {"enabled": gc.isenabled(), "collections": collections() - before, "frozen": gc.get_freeze_count()}

class Context:
    function_name, memory_limit_in_mb, aws_request_id = "probe", 128, "probe"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:probe"
    def get_remaining_time_in_millis(self): return 30000

try:
    handler({}, Context())  # not a valid event: the invocation fails, but it has begun
except Exception:
    pass
print(json.dumps({"init": after_init, "invoked": {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}}))
"""


@cache
def gc_probe(name: str, in_lambda: bool) -> dict[str, Any]:
    """The collector's state after the function's init and after its first invocation, in a fresh interpreter
    with the environment the stack gives it, and the Lambda runtime's API address set or not."""
    handler, environment = FUNCTIONS_DECLARED[name]
    env = {**os.environ, **environment.as_variables(), "PYTHONPATH": str(FUNCTIONS), "LAMBDA_TASK_ROOT": str(ROOT),
           "POWERTOOLS_TRACE_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"}
    env.pop("AWS_LAMBDA_RUNTIME_API", None)
    if in_lambda:
        env["AWS_LAMBDA_RUNTIME_API"] = "127.0.0.1:9001"  # nothing connects to it
    answer = subprocess.run([sys.executable, "-c", GC_PROBE, handler], env=env, capture_output=True, text=True, check=False)
    assert answer.returncode == 0, answer.stderr[-2000:]
    return json.loads(answer.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", FUNCTIONS_DECLARED)
def test_in_lambda_no_garbage_collection_runs_during_a_functions_init(name):
    """A full collection over the init's heap costs tens of ms of CPU (bench/speed.py --cold): in Lambda the
    collector is off from the kit's first import to the first invocation, which freezes the init's objects
    and turns it back on."""
    found = gc_probe(name, in_lambda=True)
    assert found["init"] == {"enabled": False, "collections": 0, "frozen": 0}
    assert found["invoked"]["enabled"]
    assert found["invoked"]["frozen"] > 0


@pytest.mark.parametrize("name", FUNCTIONS_DECLARED)
def test_outside_lambda_the_collector_is_left_alone(name):
    """The local twin, the CLI and the tests run the same handlers in long-lived processes: nothing is held or frozen."""
    found = gc_probe(name, in_lambda=False)
    assert found["init"]["enabled"] and found["init"]["frozen"] == 0
    assert found["invoked"] == {"enabled": True, "frozen": 0}


def contract_modules() -> list[Path]:
    """Every module of the contracts package (yours included)."""
    from inferbus_lambda import contracts

    return sorted(Path(contracts.__file__).parent.glob("*.py"))


@pytest.mark.parametrize("path", contract_modules(), ids=lambda path: path.name)
def test_a_contract_module_does_not_postpone_its_annotations(path):
    """With ``from __future__ import annotations`` pydantic compiles and evaluates every field's annotation
    from its text when the model is defined: a third of the contracts' share of each cold init."""
    postponed = [node.lineno for node in ast.parse(path.read_text()).body if isinstance(node, ast.ImportFrom)
                 and node.module == "__future__" and any(alias.name == "annotations" for alias in node.names)]
    assert not postponed, f"{path.name}:{postponed[0]}: remove it (quote a name used before it is defined)"
