"""An error raised in a module of ``pipeline/`` (a user's declaration) is theirs to fix: one line naming the file
and line, never "a bug in inferbus"."""

from __future__ import annotations

import importlib.util

from inferbus.cli_support import run_command


def test_an_error_in_a_declaration_names_its_file_and_line_not_a_bug_in_inferbus(tmp_path, capsys):
    folder = tmp_path / "pipeline"
    folder.mkdir()
    (folder / "my_routes.py").write_text("def declare():\n    return dict(1, 2)  # positional where keywords go\n")
    spec = importlib.util.spec_from_file_location("my_routes", folder / "my_routes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert run_command("inferbus docs", module.declare) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("inferbus docs: TypeError in pipeline/my_routes.py:2: ")
    assert "fix the declaration there" in line and "bug in inferbus" not in line


def test_an_error_elsewhere_is_still_reported_as_the_kit_s_with_where_it_happened(capsys):
    def broken() -> int:
        raise ZeroDivisionError("nothing to divide")

    assert run_command("inferbus demo", broken) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "unexpected ZeroDivisionError at test_cli_declaration_errors.py:" in line and "This is a bug in inferbus" in line
