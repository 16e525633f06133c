"""What a 10,000-run sweep's dry run is made of: the same dry run with parts of the train
rule's declaration taken out, each against Snakemake's dry run of as many trivial jobs.

    python -m benchmarks.dry_run_parts [--runs 10000] [--repeat 2] [--json out.json]

The sweep and the trivial jobs are ``benchmarks/dry_run.py``'s. Each variant is a copy of
the workflow (Snakefile, workflow/, envs/, profiles/) whose ``workflow/rules/train.smk``
has directives of the train rule removed or replaced; an edit that finds nothing to change
stops the benchmark (the rule changed: update the edit). Every variant and the trivial
jobs run once per round, in turns, and each keeps its least CPU seconds (user + system of
the ``snakemake`` process), printed with its ratio to the trivial jobs' as a Markdown
table (benchmarks/README.md shows one). No target: this explains ``dry_run.py``'s ratio.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks.dry_run import REPO, sweep_and_trivial, timed_dry_run

RULE_FILE = Path("workflow", "rules", "train.smk")
WORKFLOW_PARTS = ("Snakefile", "workflow", "envs", "profiles")

Blocks = dict[str, list[str]]
"""The train rule's directives in order, each with its lines (the directive's own first)."""


def split_rule(text: str) -> tuple[str, Blocks, str]:
    """(the ``rule train:`` line, its directives, whatever follows the rule)."""
    head, _, rest = text.partition("\n")
    if head != "rule train:":
        raise SystemExit(f"{RULE_FILE} no longer starts with 'rule train:'")
    blocks: Blocks = {}
    lines = rest.splitlines(keepends=True)
    for at, line in enumerate(lines):
        if line.strip() and not line.startswith(" "):  # the next top-level statement
            return head + "\n", blocks, "".join(lines[at:])
        directive = re.match(r" {4}(\w+):", line)
        if directive:
            blocks[directive.group(1)] = [line]
        elif blocks:
            blocks[next(reversed(blocks))].append(line)  # its body, or a comment after it
    return head + "\n", blocks, ""


def _keep(name: str, *entries: str) -> Callable[[Blocks], None]:
    """Keep only the lines of directive ``name`` that declare one of ``entries``."""
    return _select(name, entries, keep=True)


def _drop_entries(name: str, *entries: str) -> Callable[[Blocks], None]:
    """Remove the lines of directive ``name`` that declare one of ``entries``."""
    return _select(name, entries, keep=False)


def _select(name: str, entries: tuple[str, ...], keep: bool) -> Callable[[Blocks], None]:
    def edit(blocks: Blocks) -> None:
        first, *body = blocks[name]
        named = [line.strip().split("=")[0] in entries for line in body]
        if sum(named) != len(entries):
            raise SystemExit(f"{RULE_FILE}: {name}: not every one of {entries} found")
        blocks[name] = [first, *(line for line, n in zip(body, named, strict=True) if n == keep)]

    return edit


def _drop(name: str) -> Callable[[Blocks], None]:
    def edit(blocks: Blocks) -> None:
        del blocks[name]

    return edit


def _one_input(blocks: Blocks) -> None:
    # What a redesign could merge the image, venv and gate into: one file per run to wait
    # for (here the gate's, which every run of the sweep waits for already).
    blocks["input"] = ["    input:\n", "        SWEEP.preflight_exclude,\n"]


def _shell(blocks: Blocks) -> None:
    del blocks["script"]
    blocks["shell"] = ["    shell:\n", '        "true"\n']


EDITS: dict[str, Callable[[Blocks], None]] = {
    "one_output": _keep("output", "record"),
    "no_inputs": _drop("input"),
    "one_input": _one_input,
    "no_slurm_resources": _keep("resources", "bench", "llmbench_try"),
    "bench_only": _keep("resources", "bench"),
    "no_try": _drop_entries("resources", "bench", "llmbench_try"),
    "no_params": _drop("params"),
    "one_param": _keep("params", "run"),
    "shell": _shell,
}

VARIANTS: dict[str, tuple[str, ...]] = {
    "as it is": (),
    "1 output instead of 5": ("one_output",),
    "no inputs (image, venv, preflight gate)": ("no_inputs",),
    "no Slurm resources": ("no_slurm_resources",),
    "`shell:` instead of `script:`": ("shell",),
    "1 output, 1 input, 1 param, the Slurm resources (merged as far as possible)": (
        "one_output", "one_input", "one_param", "no_try",
    ),
    "1 output, no inputs, resources, params or script": (
        "one_output", "no_inputs", "bench_only", "no_params", "shell",
    ),
}  # fmt: skip
"""Each row of the table: the edits of the train rule (``EDITS``), in order."""


def edited_rule(text: str, edits: tuple[str, ...]) -> str:
    head, blocks, tail = split_rule(text)
    for name in edits:
        try:
            EDITS[name](blocks)
        except KeyError as missing:
            raise SystemExit(f"{RULE_FILE}: edit {name}: no directive {missing}") from None
    return head + "".join(line for lines in blocks.values() for line in lines) + tail


def workflow_copy(folder: Path, edits: tuple[str, ...]) -> Path:
    """A copy of the workflow in ``folder`` with the train rule edited; its Snakefile."""
    for part in WORKFLOW_PARTS:
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, folder / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, folder / part)
    rule = folder / RULE_FILE
    rule.write_text(edited_rule(rule.read_text(), edits))
    return folder / "Snakefile"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2, help="rounds (least of each)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="llmbench-dry-run-parts-") as tmp:
        sweep, trivial, runs = sweep_and_trivial(Path(tmp), args.runs)
        snakefiles = {"trivial": trivial / "Snakefile"}
        for i, (label, edits) in enumerate(VARIANTS.items()):
            (copy := Path(tmp, f"variant-{i}")).mkdir()
            snakefiles[label] = workflow_copy(copy, edits)
        cpu: dict[str, list[float]] = {label: [] for label in snakefiles}
        for _ in range(args.repeat):
            for label, snakefile in snakefiles.items():
                workdir = trivial if label == "trivial" else sweep
                cpu[label].append(timed_dry_run(workdir, snakefile)[1])
    least = {label: min(seconds) for label, seconds in cpu.items()}
    print("| train rule | CPU s | vs trivial jobs |\n|---|---|---|")
    for label, seconds in least.items():
        name = f"{runs:,} trivial jobs" if label == "trivial" else label
        print(f"| {name} | {seconds:.1f} | {seconds / least['trivial']:.2f}x |")
    if args.json:
        figures = {"runs": runs, "rounds": args.repeat, "cpu_s": cpu, "least_cpu_s": least}
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
