"""``rule all`` asks for every file the rules write for people and tools: each output that
no other job reads (a table, a page, the result file, a plot) is in
``Sweep.all_outputs``, which ``llmbench.core.results_layout`` names; a run's record stands
for the rest of its run folder (the train job writes them together)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llmbench.core.results_layout import results_paths
from tests.helpers import TWO_RUN_CONFIG, snakemake, write_config

pytestmark = pytest.mark.workflow

JOB = re.compile(r"^rule (\w+):$")
FILES = re.compile(r"^\s+(input|output): (.*)$")


def planned_jobs(stdout: str) -> list[tuple[str, set[str], set[str]]]:
    """(rule, inputs, outputs) of each job a dry run prints."""
    jobs: list[tuple[str, set[str], set[str]]] = []
    for line in stdout.splitlines():
        job = JOB.match(line)
        if job:
            jobs.append((job.group(1), set(), set()))
            continue
        files = FILES.match(line)
        if files and jobs:
            names = {name.removesuffix(" (update)") for name in files.group(2).split(", ")}
            jobs[-1][1 if files.group(1) == "input" else 2].update(names)
    return jobs


def unasked_outputs(stdout: str) -> set[str]:
    """Outputs no job reads that ``rule all`` does not ask for (a train job's files
    beside its record excepted)."""
    jobs = planned_jobs(stdout)
    asked = set().union(*(inputs for rule, inputs, _ in jobs if rule == "all"))
    read = set().union(*(inputs for rule, inputs, _ in jobs if rule != "all"))
    beside_records = set().union(*(outputs for rule, _, outputs in jobs if rule == "train"))
    written = set().union(*(outputs for _, _, outputs in jobs))
    return written - read - asked - beside_records


def test_the_check_finds_an_output_nobody_asks_for() -> None:
    stdout = (
        "rule aggregate:\n    input: results/runs/a/run.json\n"
        "    output: results/tables/runs.parquet (update), results/result.json (update)\n"
        "rule all:\n    input: results/tables/runs.parquet, results/runs/a/run.json\n"
    )
    assert unasked_outputs(stdout) == {"results/result.json"}


@pytest.mark.parametrize("extra", [{}, {"preflight": True, "history": {"add": True}}])
def test_rule_all_asks_for_every_output_for_people(tmp_path: Path, extra: dict) -> None:
    config = {**TWO_RUN_CONFIG, **extra}
    if "history" in extra:
        config["history"] = {**extra["history"], "path": str(tmp_path / "history")}
    write_config(tmp_path, config)
    proc = snakemake(tmp_path, "-n", "--forceall")
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = planned_jobs(proc.stdout)
    assert {"aggregate", "all"} <= {rule for rule, _, _ in jobs}
    assert unasked_outputs(proc.stdout) == set()
    asked = next(inputs for rule, inputs, _ in jobs if rule == "all")
    paths = results_paths()
    assert {paths.result, paths.page("why_slower")} <= asked
    if extra:
        assert {paths.history_added, paths.nodes_table} <= asked
