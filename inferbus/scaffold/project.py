"""The project the scaffold writes into: where each file goes, what is declared already, and
writing it all or nothing.

The project is the repository the running ``inferbus`` comes from (``Project.here()``): its
``pipeline/`` declarations and its contracts are the ones imported, so the checks (a name
already declared, an event type already registered) see exactly what the stack will see.

Example
-------
>>> project = Project.here()
>>> project.relative(project.pipeline / "iris_classifier.py")
'pipeline/iris_classifier.py'
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import pkgutil
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import ScaffoldError
from .names import check_component_name

__all__ = ["Declared", "Project", "Writes", "Written", "check_loads", "declared", "open_project"]

# Run in a fresh interpreter on the project: what the stack, the demo and the tests will import.
LOAD_CHECK = """
import importlib, sys
from inferbus_lambda.contracts import data_model
from pipeline import load_demo_fixtures, load_pipeline
name, contract_module = sys.argv[1:3]
importlib.import_module(contract_module)
pipeline = load_pipeline()
component = pipeline.component(name)
event_filter = component.accepts
model = data_model(event_filter.type)
assert model is not None, f"no contract defines {event_filter.type}"
for result_type in component.result_types:
    assert data_model(result_type) is not None, f"no contract defines {result_type}"
inputs = load_demo_fixtures(pipeline).inputs.get(name)
if inputs is not None:
    for sample in inputs.samples(inputs.count):
        model.model_validate(sample.data)
"""
LOAD_CHECK_TIMEOUT_S = 300


@dataclass(frozen=True)
class Project:
    """The paths of one inferbus repository."""

    root: Path

    @classmethod
    def here(cls) -> Project:
        """The repository this ``inferbus`` package lives in."""
        return cls(Path(__file__).resolve().parents[2])

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def manifest(self) -> Path:
        return self.models / "manifest.json"

    @property
    def functions(self) -> Path:
        return self.root / "functions"

    @property
    def contracts(self) -> Path:
        return self.functions / "inferbus_lambda" / "contracts"

    @property
    def pipeline(self) -> Path:
        return self.root / "pipeline"

    @property
    def statemachines(self) -> Path:
        return self.root / "statemachines"

    @property
    def functional_tests(self) -> Path:
        return self.root / "tests" / "functional"

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def manifest_models(self) -> dict[str, Any]:
        return json.loads(self.manifest.read_text())["models"]

    def manifest_io(self) -> ModuleType:
        """``models/manifest_io.py`` (``update_manifest``, ``sha256_of``), the module the model builds use."""
        spec = importlib.util.spec_from_file_location("inferbus_manifest_io", self.models / "manifest_io.py")
        if spec is None or spec.loader is None:
            raise ScaffoldError(f"{self.models / 'manifest_io.py'} is missing: run from an inferbus repository")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


@dataclass(frozen=True)
class Declared:
    """What the project declares already.

    Attributes
    ----------
    components
        Every component name in ``pipeline/``.
    event_types
        Every registered event type -> its data model.
    component_modules
        Component name -> the ``pipeline/`` module that declares it.
    demo_sources
        Event type -> the names of components that take it and have demo samples.
    producers
        Event type -> the names of components that publish it.
    inputs
        Component name -> the event type it takes.
    """

    components: set[str] = field(default_factory=set)
    event_types: dict[str, type] = field(default_factory=dict)
    component_modules: dict[str, str] = field(default_factory=dict)
    demo_sources: dict[str, list[str]] = field(default_factory=dict)
    producers: dict[str, list[str]] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)


def declared(project: Project) -> Declared:
    """Import the project's declarations and contracts and list what they define.

    Raises
    ------
    ScaffoldError
        When the running code is not the project's, or ``pipeline/`` does not load.
    """
    from inferbus_lambda import contracts

    import pipeline

    for package, where in ((pipeline, project.pipeline), (contracts, project.contracts)):
        if Path(package.__file__).resolve().parent != where.resolve():
            raise ScaffoldError(f"{package.__name__} is imported from {Path(package.__file__).parent}, not from "
                                f"{where}: run the inferbus installed from this project (.venv/bin/inferbus)")
    try:
        components = pipeline.load_pipeline()
        fixtures = pipeline.load_demo_fixtures(components)
        event_types = {name: contracts.data_model(name) for name in contracts.known_event_types()}
    except Exception as error:  # noqa: BLE001 - whatever a declaration raises, the user must fix it first
        raise ScaffoldError(f"pipeline/ does not load ({type(error).__name__}: {error}); fix it, then run this "
                            "again") from None
    modules: dict[str, str] = {}
    for info in pkgutil.iter_modules(pipeline.__path__):
        if not info.name.startswith("_"):
            module = importlib.import_module(f"pipeline.{info.name}")
            modules.update({component.name: info.name for component in getattr(module, "COMPONENTS", ())})
    demo_sources: dict[str, list[str]] = {}
    filters = sorted(components.filters(), key=lambda pair: pair[1].data is not None)  # unfiltered takers first
    for component, event_filter in filters:
        if component.name in fixtures.inputs:
            demo_sources.setdefault(event_filter.type, []).append(component.name)
    producers: dict[str, list[str]] = {}
    for producer in components.producers:
        for result_type in producer.result_types:
            producers.setdefault(result_type, []).append(producer.name)
    inputs = {component.name: event_filter.type for component, event_filter in components.filters()}
    return Declared({c.name for c in components.components}, event_types, modules, demo_sources, producers, inputs)


def open_project(project: Project | None, known: Declared | None, name: str) -> tuple[Project, Declared]:
    """The project (default: this repository), what it declares, and ``name`` checked as a new component's."""
    project = project or Project.here()
    known = known if known is not None else declared(project)
    check_component_name(name, declared=known.components, functions=project.functions)
    return project, known


@dataclass
class Written:
    """What a scaffold command wrote: each file (relative path) with what it is, and what to do next."""

    component: str
    files: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)


class Writes:
    """Files to create, written all together or not at all; never over an existing file."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.texts: dict[Path, str] = {}
        self.copies: dict[Path, Path] = {}
        self.files: list[tuple[str, str]] = []  # relative path, what it is: for the command's report
        self.written: list[Path] = []
        self.made: list[Path] = []  # directories created for the files, removed whole on undo
        self.manifest_before: str | None = None

    def add(self, path: Path, text: str, what: str) -> None:
        """Write ``text`` at ``path``; Python source is compiled first (a scaffold bug stops here)."""
        if path.suffix == ".py":
            try:
                compile(text, str(path), "exec")
            except SyntaxError as error:
                where = self.project.relative(path)
                raise ScaffoldError(f"internal: the generated {where} does not compile ({error}); nothing was "
                                    "written. This is a scaffold bug: please report it") from None
        self.texts[path] = text
        self.files.append((self.project.relative(path), what))

    def copy(self, source: Path, target: Path, what: str) -> None:
        self.copies[target] = source
        self.files.append((self.project.relative(target), what))

    @property
    def paths(self) -> list[Path]:
        return [*self.copies, *self.texts]

    def check_free(self) -> None:
        """Raise :class:`ScaffoldError` if any target exists already (the scaffold never overwrites)."""
        taken = [self.project.relative(path) for path in self.paths if path.exists()]
        if taken:
            one = len(taken) == 1
            raise ScaffoldError(f"{', '.join(taken)} already exist{'s' if one else ''}, so the name is taken (the scaffold "
                                f"never overwrites): choose another name, or remove {'it' if one else 'them'} if "
                                f"{'it is a leftover' if one else 'they are leftovers'} of your own")

    def commit(self, component: str, contract_module: str, *, models: dict[str, Any] | None = None,
               datasets: dict[str, Any] | None = None) -> None:
        """Write every file, then the manifest entries, then check that ``component`` loads (:func:`check_loads`);
        on any failure, remove what was written.

        Raises
        ------
        ScaffoldError
            A file in the way, or generated code that does not load.
        """
        self._write(models, datasets)
        problem = check_loads(self.project, component, contract_module)
        if problem is not None:
            self.undo()
            raise ScaffoldError(f"the generated code does not load ({problem}); nothing was kept. This is a scaffold "
                                "bug: please report it with the command")

    def _write(self, models: dict[str, Any] | None, datasets: dict[str, Any] | None) -> None:
        self.check_free()
        try:
            for target, source in self.copies.items():
                self._make_parent(target)
                shutil.copyfile(source, target)
                self.written.append(target)
            for target, text in self.texts.items():
                self._make_parent(target)
                target.write_text(text)
                self.written.append(target)
            if models or datasets:
                self.manifest_before = self.project.manifest.read_text()
                self.project.manifest_io().update_manifest(models=models, datasets=datasets, path=self.project.manifest)
        except BaseException:
            self.undo()
            raise

    def _make_parent(self, path: Path) -> None:
        missing = [parent for parent in path.parents if not parent.exists()]
        path.parent.mkdir(parents=True, exist_ok=True)
        self.made += [parent for parent in reversed(missing) if parent not in self.made]

    def undo(self) -> None:
        """Remove every file written (and the directories made for them) and restore the manifest."""
        for path in reversed(self.written):
            path.unlink(missing_ok=True)
        for directory in self.made:
            shutil.rmtree(directory, ignore_errors=True)
        self.written.clear()
        self.made.clear()
        if self.manifest_before is not None:
            self.project.manifest.write_text(self.manifest_before)
            self.manifest_before = None


def check_loads(project: Project, name: str, contract_module: str) -> str | None:
    """Import the project's declarations and ``contract_module`` in a fresh interpreter, validate
    component ``name``'s demo samples against its input contract; the error's last line, or ``None``."""
    paths = [str(project.root), str(project.functions), *filter(None, [os.environ.get("PYTHONPATH")])]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    try:
        finished = subprocess.run([sys.executable, "-c", LOAD_CHECK, name, contract_module], check=False,
                                  cwd=project.root, env=environment, capture_output=True, text=True,
                                  timeout=LOAD_CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"importing the new component took over {LOAD_CHECK_TIMEOUT_S} s"
    if finished.returncode == 0:
        return None
    lines = [line for line in finished.stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else f"exit code {finished.returncode}"
