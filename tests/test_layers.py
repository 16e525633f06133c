"""The package's layering (docs/architecture.md), read from the source: arrows point down,
no import cycle, no private name imported from another module, and no import inside a
function except of a heavy optional dependency, with a comment saying so."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

LAYERS: tuple[tuple[str, ...], ...] = (
    # 0: the bottom: data, types, rules, queries, formulas
    (
        "errors",
        "flops",
        "metrics",
        "catalog",
        "limits",
        "images",
        "kubernetes_names",
        "redact",
        "stack_dumps",
        "atomic",
        "atomic_tables",
        "arrow_memory",
        "yamlfile",
        "step_clock",
        "disk_space",
        "job_log",
    ),
    # 1: config -> run specs (what to run), and the stage folder's layout
    (
        "runspec",
        "config",
        "spec_cache",
        "profiling",
        "embedded.workload",
        "stage",
        "plan",
        "catalog.parity",
        "value_checks",
    ),
    # 2: launchers and outside systems (one module each), the processes they run
    (
        "launch",
        "containers",
        "slurm",
        "venv",
        "supervise",
        "sweep_processes",
        "provenance",
        "embedded",
        "entrypoints",
        "telemetry",
        "preflight",
    ),
    # 3: parsers: bytes -> LogSummary
    ("parsers",),
    # 4: run lifecycle: runner, attempts, the run record
    ("runner", "attempts", "run_record", "outcome", "train_outputs"),
    # 5: aggregate: runs / steps tables, references
    ("aggregate", "reference"),
    # 6: report and history: tables, plots, pages, sweeps over time
    (
        "report_tables",
        "scaling_tables",
        "plots",
        "history",
        "archive",
        "tables",
        "telemetry.plot",
        "preflight.run",
        "explain",
        "result_file",
    ),
    # 7: the command line and the workflow's helpers
    ("cli", "commands", "wiring", "workflow_check", "proof"),
)

OPTIONAL_HEAVY = frozenset(
    {"torch", "transformers", "nemo", "nemo_run", "fiddle", "transformer_engine",
     "megatron", "MaxText", "kubernetes", "lightning"}
)  # fmt: skip
"""Imported inside the functions that need them: absent from a plain install."""
HEAVY_ADAPTERS = frozenset({"llmbench.entrypoints.lightning_clock"})
"""Our modules that import a heavy optional dependency at module level (a Lightning
callback needs its base class): imported inside functions, like the dependency itself."""


@cache
def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((SRC / "llmbench").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def layer_of(module: str) -> int:
    rel = module.removeprefix("llmbench").removeprefix(".")
    best, rank = "", -1
    for i, names in enumerate(LAYERS):
        for name in names:
            if (rel == name or rel.startswith(name + ".")) and len(name) > len(best):
                best, rank = name, i
    return rank


def _module_level(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports run when the module loads (not in functions, not under TYPE_CHECKING)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                    visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(tree.body)
    return found


@cache
def imports(module: str) -> frozenset[str]:
    """llmbench modules ``module`` imports when it loads (``from pkg import sub`` counts
    as ``pkg.sub``)."""
    known = modules()
    out = set()
    for node in _module_level(ast.parse(known[module].read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif node.module and node.level == 0 and node.module.startswith("llmbench"):
            subs = [f"{node.module}.{a.name}" for a in node.names]
            named = [s for s in subs if s in known]
            out.update(named)
            if len(named) < len(subs):
                out.add(node.module)
    out.discard(module)
    return frozenset(out)


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in modules() if m != "llmbench" and layer_of(m) < 0]
    assert unplaced == []


def test_imports_point_down() -> None:
    upward = [
        f"{m} (layer {layer_of(m)}) imports {d} (layer {layer_of(d)})"
        for m in modules()
        for d in sorted(imports(m))
        if d != "llmbench" and layer_of(d) > layer_of(m)
    ]
    assert upward == []


def test_no_import_cycle() -> None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []
    cycles: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for d in sorted(imports(m)):
            if state.get(d) == 1:
                cycles.append(" -> ".join([*path[path.index(d) :], d]))
            elif d not in state:
                visit(d)
        path.pop()
        state[m] = 2

    for m in modules():
        if m not in state:
            visit(m)
    assert cycles == []


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_private_import_and_no_function_level_import(module: str) -> None:
    source = modules()[module].read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llmbench"):
            private = [a.name for a in node.names if a.name.startswith("_") and a.name[1] != "_"]
            if private:
                problems.append(f"line {node.lineno}: private {private} from {node.module}")
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            tops = {str(n).split(".")[0] for n in names if n not in HEAVY_ADAPTERS}
            if not tops <= OPTIONAL_HEAVY:
                problems.append(f"line {node.lineno}: {sorted(tops)} imported in {func.name}")
                continue
            # the comment sits on the line, or above the block of imports it starts
            i = node.lineno - 1
            while i > 0 and lines[i - 1].strip().startswith(("import ", "from ")):
                i -= 1
            if "#" not in lines[node.lineno - 1] and not lines[i - 1].strip().startswith("#"):
                problems.append(f"line {node.lineno}: function-level import without a comment")
    assert problems == []


BEFORE_THE_RANKS = ("llmbench.attempts", "llmbench.parsers", "llmbench.atomic")
"""What a train job imports before its ranks start (workflow/scripts/train.py): the
job's seconds in its allocation until then are a target (benchmarks/slurm_job_start.py)."""
TABLE_LIBRARIES = ("numpy", "pandas", "pyarrow")
"""Loaded by the modules that write tables (``atomic_tables``, ``parsers.table``,
``telemetry.results``, ``train_outputs``), once the ranks have run."""


def test_a_train_job_starts_its_ranks_without_table_libraries() -> None:
    code = (
        f"import sys; import {', '.join(BEFORE_THE_RANKS)}; "
        f"print(sorted(m for m in {TABLE_LIBRARIES!r} if m in sys.modules))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
