"""Keep ``cdk.out`` from growing across synths: remove the assets no manifest of this synth references.

Every synth stages each changed asset (a function's bundle, a container image's context) under a new
``asset.<hash>`` folder, and the CDK never deletes the old ones: a few edits to a function with its
models and onnxruntime left ``cdk.out`` at hundreds of MB. After a synth only the assets named by the
cloud assembly's ``*.assets.json`` manifests are needed (``cdk deploy`` publishes exactly those).

Example
-------
>>> prune_stale_assets("cdk.out")  # doctest: +SKIP
412_876_032
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def referenced_assets(directory: Path) -> set[str]:
    """Names of the ``asset.*`` entries the assembly's asset manifests point to (file and image assets)."""
    names: set[str] = set()
    for manifest in directory.glob("*.assets.json"):
        assets = json.loads(manifest.read_text())
        for asset in (*assets.get("files", {}).values(), *assets.get("dockerImages", {}).values()):
            source = asset.get("source", {})
            for key in ("path", "directory"):
                if key in source:
                    names.add(Path(source[key]).parts[0])
    return names


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def prune_stale_assets(directory: str | Path) -> int:
    """Delete the ``asset.*`` folders and files of ``directory`` that no asset manifest references.

    Returns the bytes freed. Does nothing when the directory has no asset manifest (not a cloud assembly).
    """
    directory = Path(directory)
    if not any(directory.glob("*.assets.json")):
        return 0
    keep = referenced_assets(directory)
    freed = 0
    for stale in sorted(path for path in directory.glob("asset.*") if path.name not in keep):
        freed += _size(stale)
        if stale.is_dir():
            shutil.rmtree(stale)
        else:
            stale.unlink()
    return freed
