"""Synthesized templates kept by the sources they come from: the twin re-synthesizes only after a change.

A start of the twin (``inferbus demo``, ``serve``, ``invoke``, ``chaos``) spent about 5 s on 2
cores in the CDK synth (jsii's Node process, and Python importing ``aws_cdk``), to get the very
template it got last time. A synth is a function of what it is asked for and of what it reads, so
the template is kept under a key made of all of it, as a build tool keeps an output: the settings,
declarations and overrides (by their ``repr``); every file of the folders the app reads
(:func:`synth_sources`: a file by its content, one over 1 MB by its size and modification time);
the ``CDK_`` and ``INFERBUS_`` variables and the region; Python's and the CDK libraries' versions.
Any change gives a new key, and so a fresh synth; only the newest few templates are kept
(:data:`KEPT_TEMPLATES`).

What has no stable ``repr`` (an object shown by its address) cannot be keyed: it is synthesized
every time.

Examples
--------
>>> import tempfile
>>> cache = TemplateCache(Path(tempfile.mkdtemp()))
>>> template, kept = cache.template({"stage": "dev"}, lambda: {"Resources": {}})
>>> kept, cache.template({"stage": "dev"}, lambda: {"Resources": {"Changed": {}}}) == ({"Resources": {}}, True)
(False, True)
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Any

__all__ = ["KEPT_TEMPLATES", "TemplateCache", "synth_sources"]

KEPT_TEMPLATES = 8  # the app, a stage or two, chaos's template per flow (300 KB each here); older ones go
SYNTH_LIBRARIES = ("aws-cdk-lib", "constructs", "jsii", "cdk-nag")
SYNTH_VARIABLES = ("CDK_", "INFERBUS_", "AWS_REGION", "AWS_DEFAULT_REGION")
# Set by the Makefile and by a synth itself, read by no synth: `make demo` and `inferbus demo` share a key.
UNREAD_VARIABLES = frozenset({"CDK_DISABLE_CLI_TELEMETRY"})
CONTENT_HASHED_BYTES = 1 << 20  # larger files (models) by size and mtime: reading 30 MB per start would cost more


def synth_sources() -> tuple[Path, ...]:
    """What the CDK app reads, from where this process imports it: the app and its constructs
    (``infra/``) with the project beside them (``cdk.json``, the handlers in ``functions/``, whose
    environment is traced from their imports, the ``models/`` and their manifest, the ASL in
    ``statemachines/``), the declarations (``pipeline/``) and this package (the settings' code)."""
    project = Path(_origin("infra")).parents[1]
    declarations = Path(_origin("pipeline")).parent
    here = Path(__file__).resolve().parent
    found = [project / "cdk.json", project / "infra", declarations, project / "functions", project / "models",
             project / "statemachines", here]
    return tuple(dict.fromkeys(path.resolve() for path in found))


def _origin(package: str) -> str:
    spec = find_spec(package)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"{package} is not importable: run from the project (make setup)")
    return spec.origin


class TemplateCache:
    """Templates by the state of what synthesizes them.

    Parameters
    ----------
    directory
        Where the templates are kept; default ``.inferbus/templates`` in the project (.gitignored).
    sources
        The files and folders whose files make the key; default :func:`synth_sources`.
    kept
        How many templates to keep (the newest).
    """

    def __init__(self, directory: Path | None = None, *, sources: tuple[Path, ...] | None = None,
                 kept: int = KEPT_TEMPLATES) -> None:
        self.sources = synth_sources() if sources is None else sources
        self.directory = directory or Path(_origin("infra")).parents[1] / ".inferbus" / "templates"
        self.kept = kept

    def key(self, declared: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> str | None:
        """A digest of everything a synth of ``declared`` reads (see the module's docstring), or ``None``
        when something in ``declared`` has no stable ``repr``."""
        environ = os.environ if environ is None else environ
        digest = hashlib.sha256()
        for line in self._facts(declared, environ):
            if " at 0x" in line:  # an object's address: differs from one process to the next
                return None
            digest.update(line.encode())
            digest.update(b"\n")
        return digest.hexdigest()[:32]

    def template(self, declared: Mapping[str, Any],
                 synthesize: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], bool]:
        """The template of ``declared`` (what ``synthesize`` is asked for, by name): the kept one while
        nothing it comes from changed, else ``synthesize()``'s, then kept.

        Returns the template and whether it was kept from an earlier synth.
        """
        key = self.key(declared)
        if key is None:
            return synthesize(), False
        path = self.directory / f"{key}.json"
        try:
            return json.loads(path.read_text()), True
        except (OSError, ValueError):  # none yet, or cut short by a crash: synthesize again
            pass
        template = synthesize()
        self._keep(path, template)
        return template, False

    def _facts(self, declared: Mapping[str, Any], environ: Mapping[str, str]) -> Iterator[str]:
        yield f"python {sys.version}"
        for library in SYNTH_LIBRARIES:
            try:
                yield f"{library} {metadata.version(library)}"
            except metadata.PackageNotFoundError:
                yield f"{library} absent"
        for name in sorted(declared):
            yield f"declared {name} {declared[name]!r}"
        for name in sorted(environ):
            if name.startswith(SYNTH_VARIABLES) and name not in UNREAD_VARIABLES:
                yield f"env {name}={environ[name]}"
        for path in self._source_files():
            stat = path.stat()
            if stat.st_size > CONTENT_HASHED_BYTES:
                yield f"file {path} {stat.st_size} {stat.st_mtime_ns}"
            else:
                yield f"file {path} {hashlib.sha256(path.read_bytes()).hexdigest()}"

    def _source_files(self) -> Iterator[Path]:
        for top in self.sources:
            if top.is_file():
                yield top
                continue
            for folder, folders, files in os.walk(top):
                folders[:] = sorted(f for f in folders if f != "__pycache__" and not f.startswith("."))
                for file in sorted(files):
                    if not file.endswith((".pyc", ".pyo")):
                        yield Path(folder) / file

    def _keep(self, path: Path, template: dict[str, Any]) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # Written aside, then renamed: a reader (another start, a test worker) never sees half a template.
            with tempfile.NamedTemporaryFile("w", dir=self.directory, suffix=".tmp", delete=False) as file:
                json.dump(template, file)
            os.replace(file.name, path)
            kept = sorted(self.directory.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
            for old in kept[self.kept:]:
                old.unlink(missing_ok=True)
        except OSError:  # a read-only checkout: the template is still returned, only not kept
            pass
