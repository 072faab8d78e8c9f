"""The source the scaffold writes, without writing it: each consumer file compiles, fits 120
columns and validates what it should; the ASL skeleton passes every static check of the ASL
files; the CLI's errors are one line with exit code 2."""

from __future__ import annotations

import doctest
import json
import sys
import types
from pathlib import Path

import pytest
from inferbus_lambda.contracts.core import EVENT_DATA_MODELS

import inferbus.scaffold.asl
import inferbus.scaffold.codegen
from inferbus.cli import main
from inferbus.model.asl import placeholders
from inferbus.model.workflow_protocol import KIT_STATES, wrap
from inferbus.scaffold import ScaffoldError
from inferbus.scaffold.asl import workflow_definition
from inferbus.scaffold.codegen import (
    ConsumerPlan,
    SampleSource,
    contract_source,
    corruptions,
    declaration_source,
    functional_test_source,
    handler_source,
)
from inferbus.scaffold.consumer import _input_field
from inferbus.scaffold.workflow import WorkflowPlan, new_workflow, step_source
from inferbus.scaffold.workflow import contract_source as workflow_contract_source
from inferbus.scaffold.workflow import declaration_source as workflow_declaration_source
from inferbus.scaffold.workflow import functional_test_source as workflow_test_source
from tests.unit import test_statemachines as asl_checks
from tests.unit.test_scaffold_reading import FIXTURES, graph_of


@pytest.mark.parametrize("module", [inferbus.scaffold.codegen, inferbus.scaffold.asl], ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted >= 1


# -- generated source -------------------------------------------------------------------------------

CASES = {
    "iris-zipmap.onnx": "iris-holdout.npz",
    "wine-names.onnx": "wine-holdout.csv",
    "diabetes-ridge.onnx": "diabetes-holdout.jsonl",
    "two-targets.onnx": None,
    "two-inputs.onnx": None,
    "image-like.onnx": None,
    "counts.onnx": None,
    "review-text.onnx": None,
    "blobs-logits.onnx": "blobs-holdout.csv",
    "blobs-sigmoid.onnx": "blobs-binary-holdout.npz",
    "blobs-output.onnx": None,
}


def plan_for(graph_file: str, samples: str | None) -> ConsumerPlan:
    spec, held_out = graph_of(graph_file, samples)
    stem = "".join(part.capitalize() for part in Path(graph_file).stem.split("-"))
    return ConsumerPlan(
        name=f"{Path(graph_file).stem}-consumer", module=f"scaffold_test_{Path(graph_file).stem.replace('-', '_')}",
        event_type=f"ScaffoldTest{stem}Submitted", result_type=f"ScaffoldTest{stem}Scored", model_name="m",
        model_file="m.onnx", graph=spec,
        fields=tuple(_input_field(i) for i in spec.inputs),
        input_module=None,
        samples=SampleSource(held_out=held_out, file="x" + Path(samples).suffix if samples else None),
        value_limit=1_000_000,
    )


def load_contract(plan: ConsumerPlan) -> types.ModuleType:
    """Execute the generated contract module as a member of the contracts package (then unregister its types)."""
    module = types.ModuleType(plan.contract_module)
    module.__package__ = "inferbus_lambda.contracts"
    sys.modules[plan.contract_module] = module  # pydantic resolves the annotations there
    try:
        exec(compile(contract_source(plan), plan.contract_module, "exec"), module.__dict__)  # noqa: S102
    finally:
        del sys.modules[plan.contract_module]
        for event_type in (plan.event_type, plan.result_type):
            EVENT_DATA_MODELS.pop(event_type, None)
    return module


@pytest.mark.parametrize("graph_file", list(CASES))
def test_every_generated_file_compiles_and_fits_120_columns(graph_file):
    plan = plan_for(graph_file, CASES[graph_file])
    for source in (contract_source(plan), handler_source(plan), declaration_source(plan), functional_test_source(plan)):
        compile(source, plan.module, "exec")
        assert max(len(line) for line in source.splitlines()) <= 120, source


@pytest.mark.parametrize("graph_file", list(CASES))
def test_the_input_contract_takes_a_valid_event_and_refuses_each_corruption(graph_file):
    plan = plan_for(graph_file, CASES[graph_file])
    submitted = getattr(load_contract(plan), plan.event_type)
    one = {"float": 1.0, "int": 2, "str": "fine and good"}
    data = {field.field: [one[field.kind]] * field.width if field.width else one[field.kind] for field in plan.fields}
    submitted.model_validate(data)
    for why, change in corruptions(plan):
        event = {"data": json.loads(json.dumps(data))}
        eval(f"lambda d: {change}")(event)
        with pytest.raises(ValueError):
            submitted.model_validate(event["data"])
        assert why
    first = plan.fields[0]
    wrong = {"float": float("nan"), "int": 1.5, "str": ""}[first.kind]
    with pytest.raises(ValueError):
        submitted.model_validate({**data, first.field: [wrong] * first.width if first.width else wrong})


def test_a_classifier_result_must_carry_a_known_label_and_probabilities_that_sum_to_one():
    plan = plan_for("wine-names.onnx", "wine-holdout.csv")
    result = getattr(load_contract(plan), plan.result_type)
    good = {"input_id": "e-1", "label": "barolo", "confidence": 0.7, "probabilities": [0.2, 0.7, 0.1],
            "model": {"name": "m", "version": "1"}, "inference_ms": 0.4, "batch_size": 3}
    result.model_validate(good)
    for broken in ({"label": "merlot"}, {"probabilities": [0.5, 0.7, 0.1]}, {"probabilities": [0.5, 0.5]}):
        with pytest.raises(ValueError):
            result.model_validate({**good, **broken})


def test_a_classifier_from_logits_must_carry_a_known_label_its_probability_and_every_class_by_name():
    plan = plan_for("blobs-logits.onnx", "blobs-holdout.csv")
    contract = load_contract(plan)
    assert contract.CLASSES == ("amber", "ruby", "straw")
    result = getattr(contract, plan.result_type)
    good = {"input_id": "e-1", "label": "ruby", "probability": 0.7,
            "scores": {"amber": 0.2, "ruby": 0.7, "straw": 0.1},
            "model": {"name": "m", "version": "1"}, "inference_ms": 0.4, "batch_size": 3}
    assert result.model_validate(good).scores == good["scores"]
    for broken in ({"label": "merlot"}, {"probability": 1.5}, {"scores": {"amber": 0.3, "ruby": 0.7}},
                   {"scores": {"amber": 0.5, "ruby": 0.7, "straw": 0.1}},
                   {"scores": {"amber": 0.2, "ruby": 0.7, "merlot": 0.1}}):
        with pytest.raises(ValueError):
            result.model_validate({**good, **broken})


def test_a_classifier_from_logits_gets_a_numpy_softmax_an_argmax_and_the_demo_scores_its_accuracy():
    plan = plan_for("blobs-logits.onnx", "blobs-holdout.csv")
    handler = handler_source(plan)
    assert "def softmax(" in handler and 'softmax(batch["logits"]' in handler and "torch" not in handler
    assert "probabilities.argmax(axis=1)" in handler and "label=CLASSES[k]" in handler
    assert handler.count("model.run(") == 1
    assert 'truth_field="label"' in declaration_source(plan)
    binary = handler_source(plan_for("blobs-sigmoid.onnx", "blobs-binary-holdout.npz"))
    assert "np.stack([1.0 - positive, positive], axis=1)" in binary and "def softmax(" not in binary
    regressor = handler_source(plan_for("blobs-output.onnx", None))  # nothing says classes
    assert "prediction=" in regressor and "softmax" not in regressor


def test_the_handler_runs_one_session_run_and_reshapes_a_flattened_input():
    plan = plan_for("image-like.onnx", None)
    source = handler_source(plan)
    assert source.count("model.run(") == 1 and "reshape(len(events), 1, 2, 2)" in source
    assert "consumer_handler(infer, load=OnnxModel.from_info)" in source


def test_synthetic_samples_say_to_replace_them_and_held_out_ones_are_read_from_models():
    synthetic = declaration_source(plan_for("counts.onnx", None))
    assert "REPLACE THEM" in synthetic and "default_rng(7)" in synthetic and "truth_field" not in synthetic
    held_out = declaration_source(plan_for("iris-zipmap.onnx", "iris-holdout.npz"))
    assert '"models" / "x.npz"' in held_out and 'truth_field="label"' in held_out


# -- the workflow skeleton --------------------------------------------------------------------------

@pytest.mark.parametrize("stems", [["Process"], ["Validate", "Score", "Summarise"]], ids=["one step", "three steps"])
def test_the_asl_skeleton_holds_its_own_states_and_wrapped_passes_every_static_check(stems):
    own = workflow_definition("OrderChecked", stems, comment="x")
    assert not set(own["States"]) & set(KIT_STATES) and own["StartAt"] == stems[0]
    machine = wrap(own, emits=["OrderChecked"], origin="skeleton.asl.json")  # refuses what the kit cannot wrap
    for check in asl_checks.CHECKS:
        check(machine, "skeleton")
    # the steps run in order, each on the previous one's answer, and the last one's answer is published
    chain = [machine["States"]["Route"]["Choices"][0]["Next"]]
    while machine["States"][chain[-1]].get("Next"):
        chain.append(machine["States"][chain[-1]]["Next"])
    assert chain == [*stems, "Publish"]
    for stem in stems[1:]:
        assert machine["States"][stem]["Parameters"]["Payload"]["data.$"] == "$.processed.data"
    (published,) = machine["States"]["Publish"]["Parameters"]["Entries"]
    assert published["Detail"]["id.$"] == "$.accepted.result_ids.OrderChecked"
    assert published["Detail"]["data.$"] == "$.processed.data"
    mine = placeholders(json.dumps(own))
    assert mine == {f"{stem}FunctionArn" for stem in stems} | {"EventBusName", "ResultSource"}


@pytest.mark.parametrize(("steps", "says"), [
    (("Score",), "must be a snake_case Python name"),
    (("import",), "must be a snake_case Python name"),
    (("route",), "would be the state 'Route'"),
    (("publish",), "would be the state 'Publish'"),
    (("score", "score"), "more than once"),
    ((), "names 1 to"),
])
def test_steps_the_workflow_cannot_have_are_refused_before_anything_is_read(steps, says):
    with pytest.raises(ScaffoldError, match=says):
        new_workflow("scaffold-steps-check", steps=steps)


# -- the CLI ----------------------------------------------------------------------------------------

# Names and types no project is likely to declare, so the errors expected are the ones tested.
NEW_NAME, NEW_TYPE = "scaffold-cli-check", "ScaffoldCliCheckSubmitted"


@pytest.mark.parametrize(("argv", "says"), [
    (["new", "consumer", "Iris", "--model", "x.onnx", "--event", NEW_TYPE], "must be kebab-case"),
    (["new", "consumer", "image-classifier", "--model", "x.onnx", "--event", NEW_TYPE], "already declared"),
    (["new", "consumer", NEW_NAME, "--model", "x.onnx", "--event", "iris"], "must be PascalCase"),
    (["new", "consumer", NEW_NAME, "--model", "nowhere.onnx", "--event", NEW_TYPE], "no such file"),
    (["new", "consumer", NEW_NAME, "--model", str(FIXTURES / "wine-holdout.csv"), "--event", NEW_TYPE],
     "give an .onnx file"),
    (["new", "consumer", NEW_NAME, "--model", str(FIXTURES / "fixed-batch.onnx"), "--event", NEW_TYPE],
     "fixed batch dimension"),
    (["new", "consumer", NEW_NAME, "--model", str(FIXTURES / "iris-zipmap.onnx"), "--event", NEW_TYPE,
      "--result", "ImageClassified"], "is an event type already"),
    (["new", "consumer", NEW_NAME, "--model", str(FIXTURES / "iris-zipmap.onnx"), "--event", "ImageSubmitted",
      "--result", "ScaffoldCliCheckScored"], "none of its fields carries graph input 'X'"),
    (["new", "workflow", "text-pipeline"], "already declared"),
    (["new", "workflow", NEW_NAME, "--event", "TextSubmitted", "--result", "TextAnalyzed"], "is an event type"),
    (["new", "workflow", NEW_NAME, "--event", "TextAnalysisFailed"], "is a workflow's failure event"),
    (["new", "workflow", NEW_NAME, "--event", "TransactionApproved"], "none of which has demo samples"),
    (["new", "workflow", NEW_NAME, "--steps", "check,route"], "would be the state 'Route'"),
    (["new", "consumer", NEW_NAME], "the following arguments are required: --model, --event"),
    (["new", "consumer", NEW_NAME, "--model", str(FIXTURES / "blobs-logits.onnx"), "--event", NEW_TYPE,
      "--labels", "amber,ruby"], "--labels gives 2 classes but the model scores 3"),
    (["new", "consumer", NEW_NAME, "--model", str(FIXTURES / "blobs-logits.onnx"), "--event", NEW_TYPE,
      "--task", "regressor", "--labels", "a,b,c"], "--labels names the classes of a classifier"),
    (["new", "consumer", NEW_NAME, "--model", str(FIXTURES / "blobs-logits.onnx"), "--event", NEW_TYPE,
      "--task", "ranker"], "invalid choice"),
    (["new", "bake"], "invalid choice"),
])
def test_every_error_is_one_line_on_stderr_with_exit_code_2(capsys, argv, says):
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and says in captured.err and "Traceback" not in captured.err
    assert captured.err.startswith("inferbus new")


@pytest.mark.parametrize("steps", [("process",), ("a_rather_long_first_step", "middle", "a_rather_long_last_step")])
@pytest.mark.parametrize(("input_module", "samples_from", "producer"), [
    (None, None, None),  # a new input type, seeded samples
    ("inferbus_lambda.contracts.text", "text-pipeline", None),  # an existing type: another component's samples
    ("inferbus_lambda.contracts.risk", None, "risk-scorer"),  # another component's results: accepted only from it
])
def test_every_generated_workflow_file_compiles_and_fits_120_columns(input_module, samples_from, producer, steps):
    plan = WorkflowPlan("a-rather-long-workflow-name", "a_rather_long_workflow_name",
                        "ARatherLongWorkflowNameSubmitted", "ARatherLongWorkflowNameProcessed",
                        "ARatherLongWorkflowNameFailed", input_module, samples_from,
                        "text_pipeline" if samples_from else None, producer,
                        "TransactionSubmitted" if producer else None, input_module if producer else None,
                        (producer, "auto-approve") if producer else (), steps)
    steps_sources = [step_source(plan, index) for index in range(len(steps))]
    for source in [render(plan) for render in (workflow_contract_source, workflow_declaration_source,
                                               workflow_test_source)] + steps_sources:
        compile(source, "generated", "exec")
        assert max(len(line) for line in source.splitlines()) <= 120, source
    # each step is its own function, named as the declaration's Task names it
    for step, source in zip(steps, steps_sources, strict=True):
        assert f"def {step}(" in source and f"lambda_handler = step_handler({step})" in source
    declaration = workflow_declaration_source(plan)
    for step, stem in zip(steps, plan.stems, strict=True):
        assert f'"{stem}": Task(' in declaration and f'"{plan.module}.{step}.lambda_handler"' in declaration


def test_a_kafka_consumers_declaration_puts_its_batch_in_its_settings_and_only_broker_facts_in_its_topic():
    """`inferbus new consumer --channel kafka`: the batch is ConsumerSettings' (the article's max.poll.records), the
    KafkaTopic the topic and cluster; both lines, evaluated, make a consumer that its channel's limits accept."""
    import dataclasses
    import re

    from inferbus.model.declarations import Consumer, EventFilter
    from inferbus.model.kafka import MAX_POLL_RECORDS, KafkaTopic
    from inferbus.model.settings import ConsumerSettings

    cluster = "arn:aws:kafka:us-east-1:123456789012:cluster/sc/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0-1"
    plan = dataclasses.replace(plan_for("iris-tensor.onnx", None), channel="kafka",
                               broker=KafkaTopic(topic="sc", cluster_arn=cluster))
    source = declaration_source(plan)
    compile(source, plan.module, "exec")
    broker = re.search(r"broker=(KafkaTopic\(.*\)),", source).group(1)
    settings = re.search(r"settings=(ConsumerSettings\(.*\)),", source).group(1)
    assert "batch" not in broker and "from inferbus.model.settings import ConsumerSettings" in source
    namespace = {"KafkaTopic": KafkaTopic, "ConsumerSettings": ConsumerSettings}
    declared = Consumer(name="sc", handler="sc.handler.lambda_handler", accepts=EventFilter("ScSubmitted"), emits="ScScored",
                        channel="kafka", broker=eval(broker, namespace), settings=eval(settings, namespace))
    assert declared.settings.batch_size == MAX_POLL_RECORDS
