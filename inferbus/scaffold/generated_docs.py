"""Rewrite the generated docs after the scaffold adds a component, as ``make docs`` does.

``make docs`` runs ``inferbus docs`` (the README's event table), ``inferbus schemas --write``
(``docs/schemas/``) and ``inferbus diagram`` (``docs/images/topology.*`` and the Mermaid block of
``docs/architecture.md``); ``make test`` checks that all of them are current. The scaffold calls
the same functions here, in its own process, so ``make test`` passes right after it.

Example
-------
>>> refreshed = refresh_generated_docs(Project.here())  # doctest: +SKIP
>>> refreshed  # doctest: +SKIP
['README.md', 'docs/schemas/IrisClassified.json', 'docs/schemas/IrisSubmitted.json', 'docs/images/topology.mmd', ...]
"""

from __future__ import annotations

import importlib
from pathlib import Path

from .project import Project

__all__ = ["DIAGRAM_STEM", "refresh_generated_docs"]

DIAGRAM_STEM = Path("docs") / "images" / "topology"  # where `inferbus diagram` writes by default


def _snapshot(paths: list[Path]) -> dict[Path, bytes | None]:
    return {path: path.read_bytes() if path.is_file() else None for path in paths}


def refresh_generated_docs(project: Project) -> list[str]:
    """Regenerate what ``make docs`` does from the declarations: the README's event table, the JSON Schemas,
    the topology diagram and the cost table of ``docs/operations.md``.

    The declarations and contracts are the ones this process imports (the scaffold checked they
    are ``project``'s); modules written since they were first imported are found too. The diagram
    synthesizes the stack (no AWS needed, a few seconds).

    Parameters
    ----------
    project
        The repository to write into.

    Returns
    -------
    list[str]
        The files that changed, relative to the project.
    """
    from inferbus.costs import update_operations
    from inferbus.diagram import mermaid, topology, update_architecture, write_diagram
    from inferbus.model.schemas import event_schemas, write_schemas
    from inferbus.reference import update_readme
    from inferbus.template import synthesize_stacks

    importlib.invalidate_caches()  # the new modules were written after the first import of their packages
    from pipeline import load_pipeline

    readme, schema_dir = project.root / "README.md", project.root / "docs" / "schemas"
    architecture, stem = project.root / "docs" / "architecture.md", project.root / DIAGRAM_STEM
    operations = project.root / "docs" / "operations.md"
    watched = [readme, architecture, operations, stem.with_suffix(".mmd"), stem.with_suffix(".svg"),
               *stem.parent.glob(f"{stem.name}-*.svg"), *schema_dir.glob("*.json")]
    before = _snapshot(watched)
    pipeline = load_pipeline()
    update_readme(pipeline, check=False, path=readme)
    schemas = event_schemas()
    write_schemas(schemas, folder=schema_dir)
    stacks = synthesize_stacks(pipeline=pipeline)  # once, for the cost table and the diagram
    update_operations(stacks.root, stacks.nested, pipeline, check=False, path=operations)
    graph = topology(template=stacks.flattened())
    written = write_diagram(graph, stem, image_format="svg")
    update_architecture(mermaid(graph), check=False, page_count=len(written) - 1, path=architecture)
    after = _snapshot([*watched, *written, *(schema_dir / f"{name}.json" for name in schemas)])
    return sorted((project.relative(path) for path, content in after.items() if before.get(path) != content),
                  key=lambda relative: (relative.startswith("docs/"), relative))


def refresh_or_note(project: Project, notes: list[str]) -> list[str] | None:
    """Rewrite the generated docs; on failure the component stays and a note says to run ``make docs``."""
    try:
        refreshed = refresh_generated_docs(project)
    except Exception as error:  # noqa: BLE001 - the component is written and loads; the docs are a step after it
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        notes.append(f"the generated docs were NOT rewritten ({type(error).__name__}: {reason}): run make docs")
        return None
    notes.append(f"generated docs rewritten, as make docs does: {', '.join(refreshed) or 'none changed'}")
    return refreshed
