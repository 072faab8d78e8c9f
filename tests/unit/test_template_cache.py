"""The template cache: a kept template comes back only while nothing a synth reads has changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inferbus.template_cache import CONTENT_HASHED_BYTES, TemplateCache, synth_sources

REPO_ROOT = Path(__file__).resolve().parents[2]


class Synth:
    """A stand-in for the CDK synth (it is not the code under test): counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict:
        self.calls += 1
        return {"Resources": {f"Synth{self.calls}": {"Type": "AWS::SQS::Queue"}}}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "infra").mkdir()
    (tmp_path / "infra" / "stack.py").write_text("QUEUES = 1\n")
    (tmp_path / "infra" / "__pycache__").mkdir()
    (tmp_path / "cdk.json").write_text('{"app": "python app.py"}')
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "big.onnx").write_bytes(b"\0" * (CONTENT_HASHED_BYTES + 1))
    return tmp_path


def cache_of(project: Path, **kwargs) -> TemplateCache:
    return TemplateCache(project / "kept", sources=(project / "cdk.json", project / "infra", project / "models"),
                         **kwargs)


def test_the_second_start_takes_the_kept_template_without_a_synth(project: Path) -> None:
    cache, synth = cache_of(project), Synth()
    first, kept_first = cache.template({"stage": ""}, synth)
    second, kept_second = cache.template({"stage": ""}, synth)
    assert (kept_first, kept_second, synth.calls) == (False, True, 1)
    assert second == first


def test_an_edit_of_a_source_synthesizes_again_even_at_the_same_size_and_time(project: Path) -> None:
    cache, synth = cache_of(project), Synth()
    source = project / "infra" / "stack.py"
    cache.template({}, synth)
    before = source.stat()
    source.write_text("QUEUES = 2\n")  # same size ...
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))  # ... and same time: read by content
    template, kept = cache.template({}, synth)
    assert (kept, synth.calls) == (False, 2)
    assert template == {"Resources": {"Synth2": {"Type": "AWS::SQS::Queue"}}}


@pytest.mark.parametrize("change", ["new file", "removed file", "big file touched", "cdk.json"])
def test_every_kind_of_source_change_gives_a_new_key(project: Path, change: str) -> None:
    cache = cache_of(project)
    before = cache.key({})
    if change == "new file":
        (project / "infra" / "queue.py").write_text("")
    elif change == "removed file":
        (project / "infra" / "stack.py").unlink()
    elif change == "big file touched":
        big = project / "models" / "big.onnx"
        os.utime(big, ns=(big.stat().st_atime_ns, big.stat().st_mtime_ns + 1_000_000))
    else:
        (project / "cdk.json").write_text('{"app": "python app.py", "context": {"stage": "dev"}}')
    assert cache.key({}) != before


def test_bytecode_and_caches_are_not_sources(project: Path) -> None:
    cache = cache_of(project)
    before = cache.key({})
    (project / "infra" / "__pycache__" / "stack.cpython-311.pyc").write_bytes(b"compiled")
    (project / "infra" / "stack.pyc").write_bytes(b"compiled")
    assert cache.key({}) == before


def test_what_the_synth_is_asked_for_and_its_variables_are_in_the_key(project: Path) -> None:
    cache = cache_of(project)
    base = {"CDK_DEFAULT_REGION": "eu-west-1", "HOME": "/root"}
    key = cache.key({"overrides": None}, base)
    assert cache.key({"overrides": {"image-classifier.batch_size": 10}}, base) != key
    assert cache.key({"overrides": None}, {**base, "CDK_DEFAULT_REGION": "us-east-1"}) != key
    assert cache.key({"overrides": None}, {**base, "INFERBUS_STAGE": "dev"}) != key
    assert cache.key({"overrides": None}, {**base, "HOME": "/home/someone"}) == key  # read by no synth
    assert cache.key({"overrides": None}, {**base, "CDK_DISABLE_CLI_TELEMETRY": "true"}) == key  # the Makefile's


def test_what_has_no_stable_repr_is_synthesized_every_time_and_never_kept(project: Path) -> None:
    cache, synth = cache_of(project), Synth()
    unstable = {"pipeline": object()}  # shown by its address: another process would find another key
    assert cache.key(unstable) is None
    assert cache.template(unstable, synth)[1] is False
    assert cache.template(unstable, synth)[1] is False
    assert synth.calls == 2
    assert not (project / "kept").exists()


def test_a_kept_template_cut_short_is_synthesized_again(project: Path) -> None:
    cache, synth = cache_of(project), Synth()
    cache.template({}, synth)
    (kept,) = (project / "kept").glob("*.json")
    kept.write_text('{"Resources": {"Sy')  # a crash mid-write of an older version, a full disk
    template, was_kept = cache.template({}, synth)
    assert (was_kept, synth.calls) == (False, 2)
    assert cache.template({}, synth) == (template, True)


def test_only_the_newest_templates_are_kept(project: Path) -> None:
    cache, synth = cache_of(project, kept=2), Synth()
    for stage in ("a", "b", "c"):
        cache.template({"stage": stage}, synth)
    assert len(list((project / "kept").glob("*.json"))) == 2
    assert cache.template({"stage": "c"}, synth)[1] is True
    assert cache.template({"stage": "a"}, synth)[1] is False  # the oldest went
    assert not list((project / "kept").glob("*.tmp"))


def test_the_sources_are_this_projects_app_declarations_handlers_and_models() -> None:
    sources = set(synth_sources())
    expected = {REPO_ROOT / name for name in ("cdk.json", "infra", "pipeline", "functions", "models", "statemachines",
                                              "inferbus")}
    assert sources == {path.resolve() for path in expected}
