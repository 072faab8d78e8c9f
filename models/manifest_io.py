"""Read-update-write for ``models/manifest.json``, shared by the model build scripts.

Several scripts (digits, risk, text, ...) each own a few entries of the one manifest.
``update_manifest`` replaces only the entries it is given and leaves every other key
exactly as it was (same values, same order), so the scripts can run in any order.
It holds an exclusive ``flock`` on the manifest while it reads and rewrites it, so two
builds running at the same time on one machine do not lose each other's entries.

Usage::

    from manifest_io import sha256_of, update_manifest

    update_manifest(models={"my-model": {...}}, datasets={"my-holdout.npz": {...}})
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

try:  # POSIX only; elsewhere the update simply runs unlocked.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

MODELS_DIR = Path(__file__).resolve().parent
MANIFEST_FILE = MODELS_DIR / "manifest.json"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def update_manifest(
    models: dict[str, dict[str, Any]] | None = None,
    datasets: dict[str, dict[str, Any]] | None = None,
    path: Path = MANIFEST_FILE,
) -> dict[str, Any]:
    """Set ``manifest["models"][name]`` / ``manifest["datasets"][name]`` for each given entry.

    Each given entry replaces that key whole; every other key is left untouched. A missing
    manifest file is created. Written as ``json.dumps(manifest, indent=2) + "\\n"``.
    Returns the manifest as written.
    """
    path = Path(path)
    with path.open("a+", encoding="utf-8") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        text = handle.read()
        manifest = json.loads(text) if text.strip() else {}
        for section, entries in (("models", models), ("datasets", datasets)):
            manifest.setdefault(section, {})
            manifest[section].update(entries or {})
        handle.seek(0)
        handle.truncate()  # now empty, so the append-mode write below lands at offset 0
        handle.write(json.dumps(manifest, indent=2) + "\n")
        handle.flush()
    return manifest
