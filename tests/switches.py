"""Finding code that decides by a name it should ask a registry about (a launcher, a device
kind): the one scan the switch tests share (tests/launch/test_launchers.py,
tests/core/test_devices.py), each with its own idea of the subject and of a name."""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection
from pathlib import Path

from tests.helpers import REPO

Predicate = Callable[[ast.AST], bool]


def switches(
    source: str,
    subject: Predicate,
    names: Predicate,
    table_keys: Collection[str],
    what: str,
    literals: Collection[str] = (),
) -> list[str]:
    """Where ``source`` (Python) decides by a name: a ``subject`` compared (``==``, ``!=``,
    ``in``) with something ``names`` accepts, a ``match`` on a subject, a string of
    ``literals``, or a table keyed by two or more of ``table_keys`` (``what`` they are)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(map(subject, operands)) and any(map(names, operands)):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Match) and subject(node.subject):
            found.append(f"line {node.lineno}: match {ast.unparse(node.subject)}")
        elif isinstance(node, ast.Constant) and node.value in literals:
            found.append(f"line {node.lineno}: the literal {node.value!r}")
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if isinstance(k, ast.Constant) and k.value in table_keys]
            if len(keys) >= 2:
                found.append(f"line {node.lineno}: a table keyed by {what}")
    return found


def python_files(allowed: Collection[Path]) -> list[Path]:
    """The Python files of the package, the workflow and the benchmarks, but ``allowed``
    (the registries that may name what they register)."""
    roots = [REPO / "src", REPO / "workflow", REPO / "benchmarks"]
    return sorted(p for root in roots for p in root.rglob("*.py") if p not in allowed)
