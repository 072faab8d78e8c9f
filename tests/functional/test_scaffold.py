"""``inferbus new``, end to end, in a copy of this repository: the CLI writes each kind of component,
the files load, the manifest stays true, every generated functional test passes as written, and the
generated docs are current right after it (the checks ``make test`` runs pass in the copy).

Nothing is written into this repository: the copy lives in a temporary folder, and the CLI and
the generated tests run there in their own interpreters (``PYTHONPATH`` points at the copy). The
components are named ``sc-...`` so that the components you add yourself do not get in the way.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inferbus.model.workflow_protocol import KIT_STATES
from tests.declared import DEMO

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "scaffold_fixtures"
CONTRACTS = Path("functions/inferbus_lambda/contracts")
SKIPPED = shutil.ignore_patterns(".venv", "node_modules", ".git", "cdk.out", "__pycache__", ".pytest_cache",
                                 ".ruff_cache", ".inferbus", "*.egg-info")
# Each command, and the files it must have written (besides the contract, handler/step, declaration and test).
CONSUMERS = {
    "sc-iris": ["--model", FIXTURES / "iris-zipmap.onnx", "--event", "ScIrisSubmitted",
                        "--samples", FIXTURES / "iris-holdout.npz"],
    "sc-wine": ["--model", FIXTURES / "wine-names.onnx", "--event", "ScWineSubmitted",
                        "--samples", FIXTURES / "wine-holdout.csv"],
    "sc-diabetes": ["--model", FIXTURES / "diabetes-ridge.onnx", "--event", "ScPatientSubmitted",
                        "--samples", FIXTURES / "diabetes-holdout.jsonl"],
    "sc-pixels": ["--model", FIXTURES / "image-like.onnx", "--event", "ScTileSubmitted"],
    "sc-reviews": ["--model", FIXTURES / "review-text.onnx", "--event", "ScReviewSubmitted"],
    "sc-digits": ["--model", REPO / "models" / "digits-svc.onnx", "--event", "ImageSubmitted",
                      "--result", "ScDigitsRescored"],
    # A PyTorch-style export: 13 inputs -> 3 logits named "output"; the samples' labels say they are classes.
    "sc-blobs": ["--model", FIXTURES / "blobs-output.onnx", "--event", "ScBlobSubmitted",
                 "--samples", FIXTURES / "blobs-holdout.csv"],
    # One column out of a Sigmoid: a binary classifier, labels 0 and 1 from the samples.
    "sc-blobs-binary": ["--model", FIXTURES / "blobs-sigmoid.onnx", "--event", "ScBlobChecked",
                        "--samples", FIXTURES / "blobs-binary-holdout.npz"],
    # Ordered per key: a fifo channel (arrivals queue, pipe, FIFO queue) grouped by the events' source.
    "sc-ordered": ["--model", FIXTURES / "iris-tensor.onnx", "--event", "ScOrderedSubmitted",
                   "--channel", "fifo", "--group-by", "$.detail.source"],
    # From a Kafka topic (MSK, placeholder ARN): its generated test writes to the embedded runtime's local cluster.
    "sc-streamed": ["--model", FIXTURES / "iris-tensor.onnx", "--event", "ScStreamedSubmitted", "--channel", "kafka",
                    "--topic", "sc-streamed", "--cluster-arn",
                    "arn:aws:kafka:us-east-1:123456789012:cluster/sc/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0-1"],
}
WORKFLOWS = {
    "sc-orders": [],
    "sc-risk-audit": ["--event", "RiskScored", "--result", "ScRiskAudited"],
    "sc-claims": ["--steps", "validate,score,summarise"],  # several steps, chained
}


def run(copy: Path, *argv: object, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy), str(copy / "functions")])}
    return subprocess.run([sys.executable, *map(str, argv)], check=False, cwd=copy, env=environment,
                          capture_output=True, text=True, timeout=timeout)


def files_in(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository with every component above added by the CLI (the consumers last: each
    rewrites the generated docs, so after the last one they must be current)."""
    copy = tmp_path_factory.mktemp("scaffold") / "repo"
    shutil.copytree(REPO, copy, ignore=SKIPPED)
    for kind, commands in (("workflow", WORKFLOWS), ("consumer", CONSUMERS)):
        for name, options in commands.items():
            finished = run(copy, "-m", "inferbus.cli", "new", kind, name, *options)
            assert finished.returncode == 0, finished.stderr
            assert finished.stdout.startswith(f"inferbus new {kind}: wrote {name}") and "Next:" in finished.stdout
            OUTPUTS[name] = finished.stdout
    return copy


OUTPUTS: dict[str, str] = {}  # what each command printed


def test_each_component_is_written_in_its_places(project):
    for name in [*CONSUMERS, *WORKFLOWS]:
        module = name.replace("-", "_")
        for path in (f"pipeline/{module}.py", f"functions/inferbus_lambda/contracts/{module}.py",
                     f"functions/{module}/__init__.py", f"tests/functional/test_{module}.py"):
            assert (project / path).is_file(), path
    assert (project / "functions/sc_iris/handler.py").is_file()
    assert (project / "functions/sc_orders/process.py").is_file()
    assert (project / "statemachines/sc_orders.asl.json").is_file()
    for step in ("validate", "score", "summarise"):
        assert (project / f"functions/sc_claims/{step}.py").is_file()
    # The result's docstring names the step that builds it: the last one.
    assert "functions/sc_claims/summarise.py`` builds this" in (project / CONTRACTS / "sc_claims.py").read_text()


def test_a_new_workflows_file_holds_only_its_own_states_one_task_per_step(project):
    for name, stems in (("sc_orders", ["Process"]), ("sc_claims", ["Validate", "Score", "Summarise"])):
        own = json.loads((project / f"statemachines/{name}.asl.json").read_text())
        assert not set(own["States"]) & set(KIT_STATES) and own["StartAt"] == stems[0]
        chain = [own["StartAt"]]
        while own["States"][chain[-1]].get("Next"):
            chain.append(own["States"][chain[-1]]["Next"])
        assert chain == [*stems, "Publish"]
    declared = run(project, "-c", "from pipeline import load_pipeline; tasks = load_pipeline().component('sc-claims')"
                   ".tasks; print(' '.join(f'{stem}={task.handler}' for stem, task in tasks.items()))")
    assert declared.stdout.split() == [f"{stem}=sc_claims.{step}.lambda_handler" for stem, step in
                                       (("Validate", "validate"), ("Score", "score"), ("Summarise", "summarise"))]
    assert not any((REPO / "pipeline" / f"{name.replace('-', '_')}.py").exists() for name in [*CONSUMERS, *WORKFLOWS])


def test_the_manifest_lists_each_new_model_and_samples_file_with_its_true_sha256(project):
    manifest = json.loads((project / "models" / "manifest.json").read_text())
    iris = manifest["models"]["iris-zipmap"]
    assert iris["labels"] == [0, 1, 2] and iris["metrics"]["holdout_accuracy"] >= 0.9  # measured on its samples
    assert iris["metrics"]["holdout_size"] == 30 and iris["inputs"] == [{"name": "X", "dtype": "float32",
                                                                         "shape": [None, 4]}]
    assert manifest["models"]["diabetes-ridge"]["metrics"]["holdout_mae"] is None  # a regressor: still to record
    assert "not yet recorded" in manifest["models"]["diabetes-ridge"]["metrics"]["note"]
    blobs = manifest["models"]["blobs-output"]
    assert blobs["labels"] == ["amber", "ruby", "straw"] and blobs["task"].startswith("classifier (softmax over")
    assert blobs["metrics"]["holdout_accuracy"] >= 0.9 and blobs["metrics"]["holdout_majority_baseline"] < 0.5
    assert "holdout_mae" not in blobs["metrics"] and blobs["metrics"]["holdout_size"] == 30
    assert manifest["models"]["wine-names"]["labels"] == ["barbera", "barolo", "grignolino"]
    assert "labels" not in manifest["models"]["diabetes-ridge"]
    assert "digits-svc" in manifest["models"] and "digits-svc-2" not in manifest["models"]  # the same file, reused
    for name in ("sc-iris-holdout.npz", "sc-wine-holdout.csv", "sc-diabetes-holdout.jsonl"):
        assert name in manifest["datasets"]
    checked = run(project, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "tests/models/test_models.py::test_every_file_matches_its_manifest_sha256")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for entry in manifest["models"].values():
        assert hashlib.sha256((project / "models" / entry["file"]).read_bytes()).hexdigest() == entry["sha256"]


def test_a_logits_model_is_read_as_a_classifier_with_one_line_saying_why(project):
    assert "note: read output 'output' [N, 3] as class logits" in OUTPUTS["sc-blobs"]
    assert "--task regressor" in OUTPUTS["sc-blobs"] and "held-out accuracy 0.9" in OUTPUTS["sc-blobs"]
    assert "as a binary classifier's probability of its second class" in OUTPUTS["sc-blobs-binary"]
    contract = (project / "functions/inferbus_lambda/contracts/sc_blobs.py").read_text()
    assert 'LABELS = Literal["amber", "ruby", "straw"]' in contract and "scores: dict[str, Probability]" in contract
    assert "VALUE_LIMIT = 8_897" in contract  # ten times the samples' largest value, 889.646, rounded up


def test_the_generated_docs_are_current_right_after_the_scaffold(project):
    for name in CONSUMERS:
        assert "note: generated docs rewritten" in OUTPUTS[name], OUTPUTS[name]
        assert "make docs   (the README" not in OUTPUTS[name]  # nothing left to regenerate by hand
    checks = ["tests/unit/test_schemas.py::test_every_event_type_has_a_current_schema_file",
              ("tests/unit/test_declarations.py::test_the_readme_event_table_is_generated_from_the_contracts_and_"
               "declarations"),
              "tests/functional/test_diagram.py::test_the_committed_diagram_is_the_templates"]
    checked = run(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *checks)
    assert checked.returncode == 0 and "3 passed" in checked.stdout, checked.stdout[-3000:] + checked.stderr[-2000:]
    for command in (["docs", "--check"], ["schemas", "--check"]):
        finished = run(project, "-m", "inferbus.cli", *command)
        assert finished.returncode == 0, finished.stdout + finished.stderr


LOGITS_RUN = """
import json
from inferbus_lambda.contracts import from_eventbridge_event, new_event, to_put_events_entry
from inferbus_lambda.contracts.sc_blobs import ScBlobSubmitted
from inferbus.local import LocalPipeline
from inferbus.model.declarations import Pipeline
from pipeline.sc_blobs import COMPONENTS, DEMO

(consumer,), (inputs,) = COMPONENTS, DEMO
samples = inputs.samples(inputs.limit)
events = [new_event(ScBlobSubmitted.model_validate(sample.data), source="inferbus.test") for sample in samples]
truth = {event.id: sample.truth for event, sample in zip(events, samples)}
with LocalPipeline(pipeline=Pipeline(consumers=(consumer,))) as pipeline:
    assert pipeline.put_events([to_put_events_entry(event, pipeline.bus_name) for event in events]) == []
    pipeline.drain()
    delivered = pipeline.tapped_events()
    results = [from_eventbridge_event(e).data for e in delivered if e["detail-type"] == "ScBlobClassified"]
print(json.dumps([{**result.model_dump(mode="json"), "truth": truth[result.input_id]} for result in results]))
"""


def test_the_logits_classifier_publishes_label_probability_and_scores_on_the_embedded_stack(project):
    finished = run(project, "-c", LOGITS_RUN, timeout=900)
    assert finished.returncode == 0, finished.stderr[-3000:]
    results = json.loads(finished.stdout.strip().splitlines()[-1])
    assert len(results) == 30
    for result in results:
        scores = result["scores"]
        assert list(scores) == ["amber", "ruby", "straw"] and abs(sum(scores.values()) - 1) < 1e-3
        assert result["label"] == max(scores, key=scores.get) and result["probability"] == max(scores.values())
    assert sum(result["label"] == result["truth"] for result in results) / len(results) >= 0.9


def test_the_new_state_machine_passes_the_static_checks_of_every_asl_file(project):
    checks = [f"tests/unit/test_statemachines.py::test_every_wrapped_workflow_passes_the_static_checks[{name}.asl.json-"
              f"{check}]" for name in ("sc_orders", "sc_risk_audit", "sc_claims")
              for check in ("check_transitions", "check_ways_out", "check_retries_and_catches", "check_failure_path")]
    checked = run(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", *checks)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(checks)} passed" in checked.stdout


def test_every_generated_functional_test_passes_as_written(project):
    tests = [f"tests/functional/test_{name.replace('-', '_')}.py" for name in [*CONSUMERS, *WORKFLOWS]]
    finished = run(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", *tests, timeout=900)
    assert finished.returncode == 0, finished.stdout[-4000:] + finished.stderr[-2000:]
    assert f"{2 * len(CONSUMERS) + 2 * len(WORKFLOWS)} passed" in finished.stdout


def test_the_kits_fast_tier_passes_with_every_new_component_as_written(project):
    """``make test-fast`` right after ``inferbus new``: the kit's own tests derived from the declarations
    (cold init, contract imports, schemas, stacks) take in each new component as the scaffold wrote it."""
    names = [*CONSUMERS, *WORKFLOWS]
    finished = run(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
                   "tests/unit", "tests/constructs", "-k", " or ".join(names), timeout=900)
    assert finished.returncode == 0, finished.stdout[-4000:] + finished.stderr[-2000:]
    passed = re.search(r"(\d+) passed", finished.stdout)
    assert passed and int(passed[1]) >= 4 * len(names), finished.stdout[-2000:]  # several tests per component ran


def test_a_command_that_fails_writes_nothing(project):
    before = files_in(project)
    manifest = (project / "models" / "manifest.json").read_text()
    for argv in (["consumer", "sc-open-width", "--model", FIXTURES / "open-width.onnx", "--event", "ScOpenSubmitted"],
                 ["consumer", "sc-iris-again", "--model", FIXTURES / "iris-tensor.onnx", "--event", "ScIrisSubmitted",
                  "--result", "ScIrisClassified"],
                 ["consumer", "sc-iris", "--model", FIXTURES / "iris-tensor.onnx", "--event", "ScIrisTwo"],
                 ["workflow", "sc-orders"],
                 ["consumer", "sc-kafka", "--model", FIXTURES / "iris-tensor.onnx", "--event", "ScKafkaSubmitted",
                  "--channel", "kafka"],
                 ["consumer", "sc-kafka", "--model", FIXTURES / "iris-tensor.onnx", "--event", "ScKafkaSubmitted",
                  "--channel", "kafka", "--topic", "t", "--bootstrap-servers", "b-1:9096"],  # no SCRAM secret
                 ["consumer", "sc-kafka", "--model", FIXTURES / "iris-tensor.onnx", "--event", "ScKafkaSubmitted",
                  "--topic", "t"],  # a topic for an sqs consumer
                 ["consumer", "sc-keyless", "--model", FIXTURES / "iris-tensor.onnx", "--event", "ScKeylessSubmitted",
                  "--channel", "fifo", "--group-by", "$.detail.data.features"]):  # a list: no message group
        finished = run(project, "-m", "inferbus.cli", "new", *argv)
        assert finished.returncode == 2 and finished.stdout == ""
        assert finished.stderr.count("\n") == 1 and "Traceback" not in finished.stderr
    assert files_in(project) == before
    assert (project / "models" / "manifest.json").read_text() == manifest


def test_an_existing_file_is_never_overwritten(project):
    (project / "functions" / "sc_leftover").mkdir()
    (project / "functions" / "sc_leftover" / "handler.py").write_text("# mine\n")
    finished = run(project, "-m", "inferbus.cli", "new", "consumer", "sc-leftover", "--model",
                   FIXTURES / "iris-tensor.onnx", "--event", "ScLeftoverSubmitted")
    assert finished.returncode == 2 and "never overwrites" in finished.stderr
    assert (project / "functions" / "sc_leftover" / "handler.py").read_text() == "# mine\n"
    assert not (project / "pipeline" / "sc_leftover.py").exists()


@pytest.mark.slow
def test_the_demo_shows_every_new_component_and_its_ledger_balances(project):
    # The components already declared send a few samples each, so this test's time is the new components', however
    # many the project holds (the new ones that reuse their samples send at most that many too).
    smaller = [option for name in DEMO for option in ("--count", f"{name}={min(DEMO[name].count, 8)}")]
    finished = run(project, "-m", "inferbus.cli", "demo", "--json", *smaller, timeout=900)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    report = json.loads(finished.stdout)
    assert report["balanced"]
    for name in ("sc-iris", "sc-wine", "sc-diabetes", "sc-pixels", "sc-reviews", "sc-digits", "sc-blobs",
                 "sc-blobs-binary", "sc-orders"):
        kind = report["kinds"][name]
        assert kind["balanced"] and kind["results"] == kind["sent"] > 0, (name, kind)
    assert report["kinds"]["sc-iris"]["accuracy"] >= 0.9
    assert report["kinds"]["sc-wine"]["accuracy"] >= 0.8
    assert report["kinds"]["sc-blobs"]["accuracy"] >= 0.9  # a classifier from logits: label vs the samples' truth
    assert report["kinds"]["sc-blobs-binary"]["accuracy"] >= 0.9
    scored = report["chains"]["RiskScored"]
    assert scored["outcomes"]["sc-risk-audit"]["results"] == scored["produced"] > 0
