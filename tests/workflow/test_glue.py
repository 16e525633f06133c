"""The workflow's ``.smk`` files only wire: ``common.smk`` builds the one ``SWEEP``
(``llmbench.workflow.sweep``) and the rule files read their values from it. No parsing,
file reads, error handling, messages or functions in a ``.smk``, and no name shared
across includes but ``SWEEP`` and what ``common.smk`` imports for the Snakefile itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import REPO

RULES = REPO / "workflow" / "rules"
COMMON = RULES / "common.smk"
SMK_FILES = sorted(RULES.glob("*.smk"))

LOGIC = {
    "a function": re.compile(r"^\s*def \w+"),
    "error handling": re.compile(r"^\s*(try:|except\b|raise\b)"),
    "a file read": re.compile(r"\bopen\(|\.read_text\(|json\.load"),
    "parsing": re.compile(r"\.split\(|\bre\.\w+\(|\bint\(|\bfloat\("),
    "a message": re.compile(r"sys\.exit|\bprint\(|llmbench: (error|warning)"),
    "a branch": re.compile(r"^\s*(if|elif|for|while)\b|\bif .* else\b"),
    "a lambda": re.compile(r"\blambda\b"),
}
"""What belongs in the package, not in a rule file."""
SNAKEMAKE_NAMES = {
    "config", "workflow", "rules", "checkpoints", "report", "directory", "expand", "unpack",
    "temp", "protected", "ancient", "touch", "pipe", "update", "Path", "True", "False", "None",
}  # fmt: skip


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of every line that is not a comment, blank, or a string."""
    lines = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.split("#", 1)[0].rstrip() if not line.lstrip().startswith('"') else ""
        if stripped.strip():
            lines.append((number, stripped))
    return lines


def glue_problems(path: Path) -> list[str]:
    """Logic found in one ``.smk`` file, and the globals it reads that another defines."""
    problems = []
    for number, line in _code_lines(path):
        for what, pattern in LOGIC.items():
            if pattern.search(line):
                problems.append(f"{path.name}:{number}: {what}: {line.strip()}")
    if path != COMMON:
        for number, line in _code_lines(path):
            if re.match(r"^\w+\s*=", line) or re.match(r"^(from|import)\b", line):
                problems.append(f"{path.name}:{number}: a global defined outside common.smk")
            for name in re.findall(r"\b([A-Z][A-Z0-9_]+)\b", line):
                if name != "SWEEP":
                    problems.append(f"{path.name}:{number}: reads global {name}")
            for name in re.findall(r"(?<![.\w])([a-z_]\w*)\(", line):
                if name not in SNAKEMAKE_NAMES:
                    problems.append(f"{path.name}:{number}: calls {name}()")
    return problems


def test_the_check_finds_logic_and_shared_globals(tmp_path: Path) -> None:
    bad = tmp_path / "bad.smk"
    bad.write_text(
        "HISTORY = CONFIG['history']\n"
        "def get_trend_labels(wildcards):\n"
        "    workload, size = wildcards.name.split('_')[:2]\n"
        "    try:\n"
        "        return json.load(open(PREFLIGHT_EXCLUDE))\n"
        "    except OSError:\n"
        "        sys.exit(f'llmbench: error: {err}')\n"
        "rule x:\n"
        "    params:\n"
        "        a=get_thing(),\n"
        "        b=lambda w: w.run,\n"
    )
    found = "\n".join(glue_problems(bad))
    for needle in ("a function", "parsing", "error handling", "a file read", "a message",
                   "a lambda", "a global defined outside common.smk", "reads global CONFIG",
                   "reads global PREFLIGHT_EXCLUDE", "calls get_thing()"):  # fmt: skip
        assert needle in found, needle


@pytest.mark.parametrize("path", SMK_FILES, ids=lambda p: p.name)
def test_a_rule_file_only_wires(path: Path) -> None:
    assert glue_problems(path) == []


def test_common_defines_the_sweep_and_nothing_the_package_could() -> None:
    defined = [
        line.split("=")[0].strip()
        for _, line in _code_lines(COMMON)
        if re.match(r"^[A-Za-z_]\w*\s*=", line)
    ]
    assert defined == ["CONFIG_FILE", "SWEEP"]
    imports = [line for _, line in _code_lines(COMMON) if re.match(r"^(from|import)\b", line)]
    assert all("llmbench" in line or "pathlib" in line for line in imports), imports


def test_the_snakefile_includes_common_first_and_reads_only_the_sweep() -> None:
    text = (REPO / "Snakefile").read_text()
    includes = re.findall(r'^include: "workflow/rules/(\w+)\.smk"', text, re.M)
    assert includes[0] == "common" and sorted(includes) == sorted(p.stem for p in SMK_FILES)
    body = text.split("rule all:", 1)[1]
    assert set(re.findall(r"\b([A-Z][A-Z0-9_]+)\b", body)) == {"SWEEP"}
