"""``inferbus demo`` and ``inferbus chaos`` read ``-c`` as ``cdk synth`` does: a stage with a module of its own runs
its declarations and its samples (each module's ``DEMO``), and a key that is no setting is refused in one line."""

from __future__ import annotations

import pytest

from inferbus.demo.inputs import declared, demo_components, inputs_of
from inferbus.model.settings import SettingsError
from infra.stages import STAGES, stage_pipeline
from tests.declared import PIPELINE


@pytest.mark.parametrize("stage", sorted(name for name, module in STAGES.items() if hasattr(module, "COMPONENTS")))
def test_a_stage_runs_its_own_components_and_settings_and_each_has_samples_to_send(stage):
    module = STAGES[stage]
    with declared({"stage": stage}) as (settings, declarations):
        assert settings.stage == stage and [c.name for c in declarations.components] == [
            c.name for c in stage_pipeline(module).components]
        for key, value in getattr(module, "SETTINGS", {}).items():
            assert getattr(settings, key) == value
        with_samples = {c.name for c in demo_components(declarations)}
        assert with_samples == {entry.component for entry in getattr(module, "DEMO", ())}
        assert all(inputs_of(c) is not None for c in declarations.producers if c.name in with_samples)
    # outside, pipeline/'s declarations and samples again
    assert {c.name for c in demo_components(PIPELINE)} == {c.name for c in PIPELINE.producers if inputs_of(c)}


def test_the_channels_stage_sends_samples_to_every_consumer_it_declares():
    with declared({"stage": "channels"}) as (_, declarations):
        assert {c.name for c in demo_components(declarations)} == {c.name for c in declarations.consumers}


def test_a_key_that_is_no_setting_is_refused_before_anything_runs():
    with pytest.raises(SettingsError, match="-c no_such_key: not a setting"), declared({"no_such_key": "1"}):
        pass
