"""The package's architecture (docs/architecture.md), read from the source.

The packages table says where each package runs (its docstring's first words) and exactly
which other packages it imports; those arrows form no cycle, nor do the imports between
modules; the ranks import only what a container has; ``core`` is pure (no process,
socket, environment or file write); no private name is imported from another module, and
no import sits inside a function except of a heavy optional dependency, with a comment
saying so."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
ARCHITECTURE = REPO / "docs" / "architecture.md"

OPTIONAL_HEAVY = frozenset(
    {"torch", "transformers", "nemo", "nemo_run", "fiddle", "transformer_engine",
     "megatron", "MaxText", "kubernetes", "lightning"}
)  # fmt: skip
"""Imported inside the functions that need them: absent from a plain install."""
HEAVY_ADAPTERS = frozenset(
    {"llmbench.ranks.entrypoints.lightning_clock", "llmbench.ranks.embedded.llama"}
)
"""Our modules that import a heavy optional dependency at module level (a Lightning
callback needs its base class, a torch module its own): imported inside functions, like
the dependency itself."""
FRAMEWORKS = frozenset(
    {"torch", "transformers", "nemo", "nemo_run", "fiddle", "lightning", "megatron",
     "transformer_engine", "MaxText", "jax"}
)  # fmt: skip
"""What a framework's container brings for the ranks, beside the standard library."""
RANKS_MAY_USE = ("llmbench.ranks", "llmbench.core", "llmbench.errors")
DEFERRED = frozenset({("llmbench.workflow.sweep", "llmbench.workflow.config_check")})
"""Our modules one module imports inside a function, with a comment: the full config
check (jsonschema, every catalog file) loads only in the process that runs it, not in
each Snakemake job that reads the main process's result (two reads per Slurm job)."""


@cache
def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((SRC / "llmbench").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def package_of(module: str) -> str | None:
    """The top-level package (or module, ``errors``) of ``module``; None for the root
    and for a name of the root itself (``llmbench.__version__``)."""
    parts = module.split(".")
    if len(parts) < 2 or f"llmbench.{parts[1]}" not in modules():
        return None
    return parts[1]


def packages() -> list[str]:
    return sorted({p for m in modules() if (p := package_of(m))})


def is_package(module: str) -> bool:
    return modules()[module].name == "__init__.py"


def dotted_names(nodes: list[ast.AST]) -> set[str]:
    """The dotted names these import statements import: ``from a import b`` counts as
    ``a.b`` when that is one of our modules, else as ``a``."""
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            subs = [f"{node.module}.{a.name}" for a in node.names]
            named = [s for s in subs if s in modules()]
            found.update(named)
            if len(named) < len(subs):
                found.add(node.module)
    return found


@cache
def names_imported(module: str) -> frozenset[str]:
    """Every name ``module`` imports, anywhere in it (functions, ``TYPE_CHECKING``)."""
    return frozenset(dotted_names(list(ast.walk(ast.parse(modules()[module].read_text())))))


@cache
def module_level_names(module: str) -> frozenset[str]:
    """The names ``module`` imports when it loads."""
    return frozenset(dotted_names(_module_level(ast.parse(modules()[module].read_text()))))


@dataclass(frozen=True)
class Row:
    where: str
    imports: frozenset[str]


@cache
def table() -> dict[str, Row]:
    """The packages table of docs/architecture.md: package -> where it runs, may import."""
    section = ARCHITECTURE.read_text().split("## Packages", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, Row] = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        name, where, may = (cell.strip() for cell in line.strip("|").split("|"))
        name = name.strip("`").removesuffix("/").removesuffix(".py")
        assert name not in rows, f"{name} has two rows"
        rows[name] = Row(where, frozenset(re.findall(r"`(\w+)`", may)))
    return rows


def test_the_table_has_a_row_per_package() -> None:
    assert sorted(table()) == packages()


@cache
def package_imports(package: str) -> dict[str, list[str]]:
    """Other package -> the imports of ``package``'s modules that reach it."""
    found: dict[str, list[str]] = {}
    for module in modules():
        if package_of(module) != package:
            continue
        for name in sorted(names_imported(module)):
            other = package_of(name) if name.startswith("llmbench.") else None
            if other and other != package:
                found.setdefault(other, []).append(f"{module} imports {name}")
    return found


@pytest.mark.parametrize("package", packages())
def test_a_package_imports_what_the_table_says(package: str) -> None:
    actual = package_imports(package)
    listed = table()[package].imports
    unlisted = {other: actual[other][0] for other in sorted(actual.keys() - listed)}
    assert unlisted == {}, "imported, not in docs/architecture.md"
    assert sorted(listed - actual.keys()) == [], "in docs/architecture.md, never imported"


def test_the_packages_import_one_way() -> None:
    arrows = {name: row.imports for name, row in table().items()}
    cycles = find_cycles(arrows)
    assert cycles == []


def find_cycles(graph: dict[str, frozenset[str]]) -> list[str]:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []
    cycles: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


@pytest.mark.parametrize("package", sorted(m for m in modules() if is_package(m))[1:])
def test_a_package_says_where_it_runs_in_one_line(package: str) -> None:
    """The docstring's first line is ``<where it runs>: <what it holds>.``; a top-level
    package's "where" is its row's in docs/architecture.md (the root, ``llmbench``, runs
    nowhere of its own)."""
    doc = ast.get_docstring(ast.parse(modules()[package].read_text())) or ""
    first = doc.split("\n\n", 1)[0]
    assert "\n" not in first and first.endswith("."), first
    where, _, what = first.partition(": ")
    assert where and what, first
    if package.count(".") == 1:
        assert where == table()[package_of(package)].where


def test_the_ranks_need_only_what_a_container_has() -> None:
    """A rank runs in the framework's container, which holds the standard library and
    the framework, not llmbench's dependencies: every module of ``ranks`` and every
    module it loads imports nothing else."""
    problems = []
    loaded = set()
    for module in modules():
        if module.startswith("llmbench.ranks"):
            loaded |= loads(module)
            for name in sorted(names_imported(module)):
                if not allowed_on_a_rank(name, FRAMEWORKS):
                    problems.append(f"{module} imports {name}")
    for module in sorted(loaded):
        if not module.startswith(RANKS_MAY_USE) and module != "llmbench":
            problems.append(f"the ranks load {module}")
        elif not module.startswith("llmbench.ranks"):
            for name in sorted(module_level_names(module)):
                if not allowed_on_a_rank(name, frozenset()):
                    problems.append(f"{module}, which the ranks load, imports {name}")
    assert problems == []


def allowed_on_a_rank(name: str, frameworks: frozenset[str]) -> bool:
    top = name.split(".")[0]
    if top == "llmbench":
        return name == "llmbench" or name.startswith(RANKS_MAY_USE)
    return top in sys.stdlib_module_names or top == "__future__" or top in frameworks


def loads(module: str) -> set[str]:
    """Our modules that loading ``module`` runs: its module-level imports, their parent
    packages, and so on."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        parts = current.split(".")
        for name in [*imports(current), *(".".join(parts[:i]) for i in range(1, len(parts)))]:
            if name in modules() and name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def _module_level(tree: ast.Module) -> list[ast.AST]:
    """Imports run when the module loads (not in functions, not under TYPE_CHECKING)."""
    found: list[ast.AST] = []

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
    """Our modules that ``module`` imports when it loads."""
    return frozenset(n for n in module_level_names(module) if n in modules()) - {module}


def test_no_import_cycle() -> None:
    assert find_cycles({m: imports(m) for m in modules()}) == []


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
            tops = {
                str(n).split(".")[0]
                for n in names
                if n not in HEAVY_ADAPTERS and (module, n) not in DEFERRED
            }
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


CORE_MAY_NOT_IMPORT = frozenset({"subprocess", "socket", "shutil", "tempfile"})
"""Modules that start processes, open sockets or change files: ``core`` is pure."""
OS_OUTSIDE = frozenset(
    {"environ", "environb", "getenv", "putenv", "unsetenv", "system", "popen", "remove",
     "unlink", "rename", "replace", "makedirs", "mkdir", "rmdir", "symlink", "link",
     "truncate", "chmod"}
)  # fmt: skip
"""``os`` names that read or set the environment, start a process or change a file."""
WRITES = frozenset(
    {"write_text", "write_bytes", "mkdir", "touch", "unlink", "rmdir", "symlink_to",
     "hardlink_to", "chmod"}
)  # fmt: skip
"""``pathlib.Path`` methods that change a file or folder."""


def impurities(source: str) -> list[str]:
    """What in ``source`` reaches beyond its arguments (one line each): an import of
    ``CORE_MAY_NOT_IMPORT``, an ``os`` name of ``OS_OUTSIDE``, a ``Path`` write or an
    ``open`` for writing."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            tops = {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            tops = {(node.module or "").split(".")[0]}
            if node.module == "os":
                tops |= {f"os.{a.name}" for a in node.names if a.name in OS_OUTSIDE}
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            outside = node.value.id == "os" and node.attr in OS_OUTSIDE
            tops = {f"os.{node.attr}"} if outside else set()
        elif isinstance(node, ast.Call):
            tops = set()
            if isinstance(node.func, ast.Attribute) and node.func.attr in WRITES:
                found.append(f"line {line}: .{node.func.attr}()")
            if isinstance(node.func, ast.Name) and node.func.id == "open":
                modes = [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "mode")]
                mode = modes[0].value if modes and isinstance(modes[0], ast.Constant) else "r"
                if not isinstance(mode, str) or set(mode) & set("wax+"):
                    found.append(f"line {line}: open(..., {mode!r})")
        else:
            continue
        found += [f"line {line}: {name}" for name in sorted(tops & CORE_MAY_NOT_IMPORT)]
        found += [f"line {line}: {name}" for name in sorted(tops) if name.startswith("os.")]
    return found


@pytest.mark.parametrize(
    "planted",
    ["import subprocess", "from socket import gethostname", "import os\nos.environ['A']",
     "from os import getenv", "import os\nos.makedirs('x')", "Path('x').write_text('')",
     "open('x', 'w')", "open('x', mode='a')", "import shutil.util"],
)  # fmt: skip
def test_the_purity_check_finds_what_is_planted_in_a_core_module(planted: str) -> None:
    module = modules()["llmbench.core.flops"].read_text()
    assert impurities(module) == []
    assert len(impurities(f"{module}\n{planted}\n")) == 1, planted


def test_the_core_reads_no_process_socket_environment_and_writes_no_file() -> None:
    problems = [
        f"{module} {line}"
        for module, path in modules().items()
        if module == "llmbench.core" or module.startswith("llmbench.core.")
        for line in impurities(path.read_text())
    ]
    assert problems == []


BEFORE_THE_RANKS = ("llmbench.job.attempts", "llmbench.parsers", "llmbench.files.atomic")
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
