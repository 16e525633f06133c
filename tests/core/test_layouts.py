"""Each file name of a run folder (``llmbench.core.run_folder``) and each path of
``results/`` (``llmbench.core.results_layout``) is spelled once: no other module of
``src/`` and no rule of ``workflow/`` writes it as a string; they read the layout."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from llmbench.core import results_layout, run_folder
from llmbench.core.results_layout import PAGES, results_paths
from tests.helpers import REPO

LAYOUTS = {REPO / "src/llmbench/core/run_folder.py", REPO / "src/llmbench/core/results_layout.py"}
ELSEWHERE = REPO / "src/llmbench/proof"
"""The GPU proof kit: a harness of its own, with its own summary.json, leaving the package."""


ENDS = {"name": "(?:$|/)", "prefix": "", "folder": "/"}


def _strings(module: object) -> dict[str, str]:
    return {
        name: value
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, str)
    }


def layout_names() -> dict[str, re.Pattern[str]]:
    """What no other module may spell: each file name (a path's last part), each prefix of
    a numbered or per-host name, and each ``results/`` path of more than one part."""
    names: dict[str, str] = {}
    for name, value in _strings(run_folder).items():
        if "%" not in value and "*" not in value and not name.endswith("SUFFIX"):
            names[value] = "prefix" if name.endswith("PREFIX") else "name"
            if name.endswith("_DIR"):  # a bare word may be a key too: a folder before a "/"
                names[value] = "folder"
    for value in _strings(results_layout).values():
        if "/" in value and "{" not in value.rsplit("/", 1)[1]:
            names[value.rsplit("/", 1)[1]] = "name"
            names[value] = "name"
    for page in PAGES:
        names[results_layout.page(page).rsplit("/", 1)[1]] = "name"
    names[f"{results_layout.RESULTS}/"] = "prefix"
    return {
        value: re.compile(rf"(?:^|/){re.escape(value)}" + ENDS[kind])
        for value, kind in names.items()
    }


def python_strings(text: str) -> list[tuple[int, str]]:
    """(line, value) of every string constant that is not a docstring, f-string parts too."""
    tree = ast.parse(text)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    helps = {
        id(keyword.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for keyword in node.keywords
        if keyword.arg == "help"  # an option's help: prose for people, like a docstring
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings | helps
    ]


def rule_strings(text: str) -> list[tuple[int, str]]:
    """(line, value) of every quoted string on a rule file's code lines."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        found += [(number, value) for value in re.findall(r'"([^"]*)"', code)]
    return found


def spelled(path: Path, text: str) -> list[str]:
    strings = python_strings(text) if path.suffix == ".py" else rule_strings(text)
    patterns = layout_names()
    return [
        f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path.name}:{line}: "
        f"{value!r} spells {name!r}"
        for line, value in strings
        for name, pattern in patterns.items()
        if pattern.search(value)
    ]


def test_the_check_finds_a_spelled_name(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    text = (
        '"""Reads run.json (a docstring may name it)."""\n'
        'RECORD = "run.json"\n'
        'def f(n):\n    return f"attempt-{n}", "results/tables/runs.parquet", "run.json x"\n'
    )
    problems = spelled(planted, text)
    assert sorted(p.split(": ", 1)[1] for p in problems) == sorted(
        [
            "'run.json' spells 'run.json'",
            "'attempt-' spells 'attempt-'",
            "'results/tables/runs.parquet' spells 'runs.parquet'",
            "'results/tables/runs.parquet' spells 'tables/runs.parquet'",
            "'results/tables/runs.parquet' spells 'results/'",
        ]
    )
    rules = tmp_path / "planted.smk"
    text = 'rule a:\n    output:\n        "results/plots/{group}",  # "run.json"\n'
    assert len(spelled(rules, text)) == 1


def sources() -> list[Path]:
    files = [*(REPO / "src").rglob("*.py"), *(REPO / "workflow").rglob("*.py")]
    files += [*(REPO / "workflow").rglob("*.smk"), REPO / "Snakefile"]
    return sorted(p for p in files if p not in LAYOUTS and not p.is_relative_to(ELSEWHERE))


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_module_spells_a_layout_name(path: Path) -> None:
    assert spelled(path, path.read_text()) == []


def test_each_layout_name_is_one_file() -> None:
    values = [*_strings(run_folder).values(), *_strings(results_layout).values()]
    assert len(values) == len(set(values))


def test_the_rules_paths_are_the_layouts() -> None:
    paths = results_paths()
    assert paths.run_record == "results/runs/{run}/run.json"
    assert paths.page("why_slower") == "results/tables/why_slower.html"
    assert paths.log("train/{run}") == "results/logs/train/{run}.log"
    assert run_folder.ATTEMPT_DIR.fullmatch(run_folder.attempt_name(12))
    assert run_folder.is_nccl_debug_file("nccl-debug.node1.4242.log")
    assert not run_folder.is_nccl_debug_file("nccl-debug.node1.4242.txt")
