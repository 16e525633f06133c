"""Snakemake through its documented API only, over the range llmbench declares: no module
of the package imports it, nothing patches it, and the declared range, the Snakefile's
``min_version`` and the oldest version CI runs (envs/snakemake-oldest.txt) agree."""

from __future__ import annotations

import re

from tests.helpers import REPO

Version = tuple[int, ...]


def version(text: str) -> Version:
    """``9.0`` and ``9.0.0`` alike: trailing zeros dropped."""
    parts = [int(p) for p in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _pin(path: str, name: str) -> Version:
    for line in (REPO / path).read_text().splitlines():
        if re.match(rf"{name}(\[[\w,]+\])?==", line):
            return version(line.split("==", 1)[1].split(";")[0].strip())
    raise AssertionError(f"{path}: no {name}== pin")


def test_the_declared_range_is_what_ci_runs() -> None:
    declared = re.search(
        r'"snakemake(?:\[\w+\])?>=([\d.]+),<([\d.]+)"', (REPO / "pyproject.toml").read_text()
    )
    minimum = re.search(r'min_version\("([\d.]+)"\)', (REPO / "Snakefile").read_text())
    assert declared is not None and minimum is not None
    lowest, below = version(declared.group(1)), version(declared.group(2))
    oldest = _pin("envs/snakemake-oldest.txt", "snakemake")
    pinned = _pin("envs/requirements.txt", "snakemake")
    assert lowest == version(minimum.group(1)) == oldest  # 9 == 9.0 == 9.0.0
    assert oldest <= pinned < below
    # CI installs the oldest one and runs the workflow tests with it
    ci = (REPO / ".ci/run").read_text()
    assert "envs/snakemake-oldest.txt" in ci and "test_config_dry_runs.py" in ci


def test_the_package_never_imports_or_patches_snakemake() -> None:
    imports = re.compile(r"^\s*(import snakemake|from snakemake)", re.M)
    patch = re.compile(r"\b(Resource|Rule|Workflow|DAG|Job)\.\w+\s*=[^=]")
    for path in sorted((REPO / "src").rglob("*.py")):
        text = path.read_text()
        assert not imports.search(text), path
        assert not patch.search(text), path
    for path in sorted((REPO / "workflow").rglob("*.smk")):
        text = path.read_text()
        assert not imports.search(text), path  # the rules use the package, not Snakemake's
        assert not patch.search(text), path
