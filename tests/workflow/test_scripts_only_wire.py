"""The workflow's scripts only wire: they take the rule's values from ``snakemake``, call
the package and turn its error into one line. Whatever decides (a branch, a loop, a
filter) is a function of the package, tested there; a file is written through
``llmbench.files`` (atomic), and the job's stderr goes to its log through ``job_log``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers import REPO

SCRIPTS = sorted((REPO / "workflow" / "scripts").glob("*.py"))
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _constant_index(node: ast.Subscript) -> bool:
    return isinstance(node.slice, ast.Constant)


def wiring_problems(source: str, name: str = "script") -> list[str]:
    """What in one script decides or writes on its own, by line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.If, ast.IfExp, ast.For, ast.While, ast.Match)):
            found.append((node.lineno, "a branch or loop"))
        elif isinstance(node, COMPREHENSIONS) and any(g.ifs for g in node.generators):
            found.append((node.lineno, "a filter"))
        elif isinstance(node, ast.Subscript) and not _constant_index(node):
            found.append((node.lineno, "a selection"))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "open":
            found.append((node.lineno, "a file opened (write through llmbench.files)"))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.append((node.lineno, f"{ast.unparse(node)} set (the log: job_log)"))
    return [f"{name}:{line}: {what}" for line, what in sorted(found)]


def test_the_check_finds_decisions_and_own_writes() -> None:
    bad = (
        "import sys\n"
        "sys.stderr = open(snakemake.log[0], 'w')\n"
        "samples = samples[samples['run_id'].isin(wanted)]\n"
        "if result['problems']:\n"
        "    exit_with_error('x')\n"
        "names = [n for n in names if n]\n"
    )
    assert wiring_problems(bad) == [
        "script:2: a file opened (write through llmbench.files)",
        "script:2: sys.stderr set (the log: job_log)",
        "script:3: a selection",
        "script:4: a branch or loop",
        "script:6: a filter",
    ]


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_a_script_only_wires(path: Path) -> None:
    assert wiring_problems(path.read_text(), path.name) == []
