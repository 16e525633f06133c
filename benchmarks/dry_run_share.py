"""llmbench's own share of a 10,000-run sweep's dry run: of the CPU samples of
``snakemake -n``, those spent in llmbench's code (reading the Snakefile and rules, the config
check, the values the rules ask for) against Snakemake's own work.

    python -m benchmarks.dry_run_share [--runs 10000] [--rate 250] [--json out.json]
                                       [--no-fail]

The sweep is ``benchmarks/dry_run.py``'s. The dry run is sampled by py-spy (``--rate``
stacks a second, raw stacks). Each sample is given to the innermost frame that is either
llmbench's (``src/llmbench``, the Snakefile and ``workflow/``) or Snakemake's (its package
and plugins); frames of other libraries (PyYAML, jsonschema, the standard library) count
for whoever called them. llmbench's samples are split by where they are: reading the
Snakefile and rules (the ``.smk`` code itself), the config check (``core/``,
``workflow/config_check``), the rules' values (``workflow/sweep``, ``workflow/rule_values`` and
what they call) and the rest. One run, so both sides see the same load. Target: llmbench's
share <= 10 %.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from benchmarks.dry_run import REPO, sweep_and_trivial

MAX_SHARE = 0.10
SRC = str(REPO / "src" / "llmbench") + "/"
WORKFLOW_FILES = (str(REPO / "Snakefile"), str(REPO / "workflow") + "/")
FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^:()]+)(?::\d+)?\)$")


def owner(file: str) -> str | None:
    """``llmbench``, ``snakemake`` or None (another library: its caller decides)."""
    if file.startswith(SRC) or file.startswith(WORKFLOW_FILES):
        return "llmbench"
    if "/snakemake/" in file or "/snakemake_" in file:
        return "snakemake"
    return None


def part_of_llmbench(file: str) -> str:
    """Which of llmbench's parts a frame belongs to."""
    if file.startswith(WORKFLOW_FILES):
        return "reading the Snakefile and rules"
    relative = file.removeprefix(SRC)
    if relative.startswith("spec/") or relative == "workflow/config_check.py":
        return "the config check"
    if relative.startswith("workflow/"):
        return "the rules' values"
    return "other llmbench code"


def attribute(stack: list[str]) -> str:
    """The part a sample's stack (outermost frame first) is charged to."""
    for frame in reversed(stack):
        match = FRAME.match(frame)
        if not match:
            continue
        who = owner(match["file"])
        if who == "snakemake":
            return "snakemake"
        if who == "llmbench":
            return part_of_llmbench(match["file"])
    return "snakemake"  # the interpreter's own start-up and anything unattributed


def shares(raw: str) -> Counter[str]:
    """Samples per part from py-spy's raw output (``frame;frame;... count`` per line)."""
    counts: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            counts[attribute(stack.split(";"))] += int(count)
    return counts


def sampled_dry_run(workdir: Path, out: Path, rate: int) -> None:
    command = [
        "py-spy", "record", "--rate", str(rate), "--format", "raw", "--output", str(out),
        "--nonblocking", "--full-filenames", "--",
        sys.executable, "-m", "snakemake", "-n", "--quiet", "rules",
        "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir), "--cores", "1",
    ]  # fmt: skip
    proc = subprocess.run(command, cwd=workdir, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not out.exists():
        sys.exit(f"sampled dry run failed:\n{proc.stderr[-3000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=250, help="samples a second")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even if missed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="llmbench-dry-run-share-") as tmp:
        ours, _, runs = sweep_and_trivial(Path(tmp), args.runs)
        out = Path(tmp) / "samples.txt"
        sampled_dry_run(ours, out, args.rate)
        counts = shares(out.read_text())
    total = sum(counts.values())
    mine = total - counts["snakemake"]
    figures = {
        "runs": runs,
        "samples": total,
        "llmbench_share": round(mine / total, 4),
        "parts": {part: round(n / total, 4) for part, n in counts.most_common()},
        "target_share": MAX_SHARE,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    missed = mine / total > MAX_SHARE
    if missed:
        print(f"target missed: llmbench's share {mine / total:.1%} (<= {MAX_SHARE:.0%})")
    return 1 if missed and not args.no_fail else 0


if __name__ == "__main__":
    sys.exit(main())
