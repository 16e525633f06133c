"""Dry-run cost of a 10,000-run sweep vs. Snakemake's own dry run of 10,000 trivial jobs.

    python benchmarks/dry_run.py [--runs 10000] [--repeat 2] [--json out.json] [--no-fail]

The sweep: every catalog recipe row (all workloads, sizes, dtypes, GPU types, scales)
in every variant, filled up to ``--runs`` with embedded-workload scales; ``launcher:
srun``, ``container: enroot`` so the DAG holds the image imports and the venv too (the
embedded scales in entries of at most 100 scales, the schema's bound), and two named
preflight nodes (10,066 jobs for 10,000 runs). The
baseline: one rule with a wildcard, ``--runs`` outputs, nothing else. Both are timed as
``snakemake -n`` from the command line (parse, config validation, DAG, job listing) in
the same run, one after the other; target: sweep < 60 s. The ratio is reported: most of it
is Snakemake's own work per job (``benchmarks.dry_run_parts``); llmbench's share is
``benchmarks.dry_run_share``'s target.

Besides wall time, each side's CPU time (user + system of the ``snakemake`` process) is
printed with its ratio: a dry run is one busy thread, so on an idle machine both agree,
and on a shared one the CPU figures move less with the other processes' load.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from llmbench.core.catalog import load_catalog
from llmbench.core.config import run_specs, validate_config
from llmbench.launch.variants import VARIANTS

REPO = Path(__file__).resolve().parents[1]
MAX_SECONDS = 60.0
MAX_SCALES = 100  # scales per sweep entry (the config schema's maxItems)
# Named, not asked of `sinfo`: the partition's nodes would make the job count (one
# preflight_node job per node) depend on whether a Slurm controller answers here.
PREFLIGHT_NODES = ("node1", "node2")
IMAGES = {
    "llama3.1-nemo": "nvidia/nemo:25.07",
    "nemotron4-nemo": "nvidia/nemo:25.07",
    "llama3.1-mbridge": "nvidia/nemo:25.09",
}
TRIVIAL = """
rule all:
    input:
        expand("out/{i}.txt", i=range(%d)),


rule make:
    output:
        "out/{i}.txt",
    shell:
        "touch {output}"
"""


def sweep_config(runs: int) -> dict:
    catalog = load_catalog()
    sweeps = []
    for workload in catalog.workloads():
        for row in catalog.rows(workload):
            sweeps.append(row.sweep_entry(variants=list(VARIANTS)))
    config = {
        "sweeps": sweeps,
        "launcher": "srun",
        "container": "enroot",
        "images": IMAGES,
        "preflight": {"nodes": list(PREFLIGHT_NODES)},
    }
    catalog_runs = len(run_specs(validate_config(config)))
    missing = max(runs - catalog_runs, 0)
    tiny = {"workload": "tiny-llama", "sizes": ["tiny"], "gpu_type": "cpu"}
    scales = list(range(1, missing // 2 + 1))  # fp32 and bf16 per scale
    for first in range(0, len(scales), MAX_SCALES):
        sweeps.append({**tiny, "dtypes": ["fp32", "bf16"], "scales": scales[first:][:MAX_SCALES]})
    if missing % 2:
        sweeps.append({**tiny, "dtypes": ["fp32"], "scales": [missing // 2 + 1]})
    return config


def sweep_and_trivial(folder: Path, runs: int) -> tuple[Path, Path, int]:
    """In ``folder``: the sweep's working directory (its config.yaml), the trivial jobs'
    (their Snakefile) and the sweep's number of runs."""
    ours, trivial = folder / "sweep", folder / "trivial"
    ours.mkdir()
    trivial.mkdir()
    config = sweep_config(runs)
    (ours / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    count = len(run_specs(validate_config(config)))
    (trivial / "Snakefile").write_text(TRIVIAL % count)
    return ours, trivial, count


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_dry_run(workdir: Path, snakefile: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds for ``snakemake -n`` and the number of jobs it listed."""
    cpu_start = _children_cpu_s()
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules",
         "--snakefile", str(snakefile), "--directory", str(workdir), "--cores", "1"],
        cwd=workdir, capture_output=True, text=True, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    cpu_s = _children_cpu_s() - cpu_start
    if proc.returncode != 0:
        sys.exit(f"dry run failed in {workdir}:\n{proc.stderr[-3000:]}")
    total = [line for line in proc.stdout.splitlines() if line.startswith("total")]
    return elapsed, cpu_s, int(total[-1].split()[-1]) if total else -1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2, help="rounds (best of each side)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even if a target is missed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="llmbench-dry-run-") as tmp:
        ours, trivial, runs = sweep_and_trivial(Path(tmp), args.runs)
        # Alternate the two and keep each one's best: load from elsewhere on the machine
        # then inflates both sides alike instead of one.
        base_times, sweep_times, base_cpu, sweep_cpu = [], [], [], []
        for _ in range(args.repeat):
            base_s, base_cpu_s, base_jobs = timed_dry_run(trivial, trivial / "Snakefile")
            sweep_s, sweep_cpu_s, sweep_jobs = timed_dry_run(ours, REPO / "Snakefile")
            base_times.append(base_s)
            sweep_times.append(sweep_s)
            base_cpu.append(base_cpu_s)
            sweep_cpu.append(sweep_cpu_s)
        base_s, sweep_s = min(base_times), min(sweep_times)
    ratio = sweep_s / base_s
    figures = {
        "runs": runs,
        "sweep_jobs": sweep_jobs,
        "sweep_dry_run_s": round(sweep_s, 2),
        "trivial_jobs": base_jobs,
        "trivial_dry_run_s": round(base_s, 2),
        "rounds": args.repeat,
        "ratio": round(ratio, 3),
        "sweep_cpu_s": round(min(sweep_cpu), 2),
        "trivial_cpu_s": round(min(base_cpu), 2),
        "cpu_ratio": round(min(sweep_cpu) / min(base_cpu), 3),
        "target_s": MAX_SECONDS,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    missed = sweep_s > MAX_SECONDS
    if missed:
        print(f"target missed: {sweep_s:.1f} s (< {MAX_SECONDS})")
    return 1 if missed and not args.no_fail else 0


if __name__ == "__main__":
    sys.exit(main())
