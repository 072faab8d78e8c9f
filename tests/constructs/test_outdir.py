"""cdk.out keeps only the assets of the last synth (infra.outdir), read from the CDK's own asset manifests."""

from __future__ import annotations

from aws_cdk import App, AssetStaging, Stack
from aws_cdk import aws_lambda as lambda_

from infra.outdir import prune_stale_assets, referenced_assets


def synth_function(outdir, source) -> None:
    AssetStaging.clear_asset_hash_cache()  # as in a new process: each `cdk synth` is one
    stack = Stack(App(outdir=str(outdir)), "Bare")
    lambda_.Function(stack, "Handler", code=lambda_.Code.from_asset(str(source)), handler="app.handler",
                     runtime=lambda_.Runtime.PYTHON_3_12)
    stack.node.root.synth()


def test_a_second_synth_leaves_only_its_own_assets(tmp_path):
    source, out = tmp_path / "function", tmp_path / "cdk.out"
    source.mkdir()
    for version in (1, 2, 3):  # three edits of the function, three synths into one cdk.out
        (source / "app.py").write_text(f"def handler(event, context):\n    return {version}\n")
        synth_function(out, source)
    staged = {path.name for path in out.glob("asset.*")}
    assert len(staged) == 3  # what the CDK leaves: every edit's bundle

    assert prune_stale_assets(out) > 0
    (kept,) = {path.name for path in out.glob("asset.*")}
    assert kept in referenced_assets(out)
    assert "return 3" in (out / kept / "app.py").read_text()  # the last synth's, which a deploy publishes
    assert prune_stale_assets(out) == 0  # nothing more to free
