"""Time and peak memory of aggregating many synthetic runs into the tables and plots.

    python benchmarks/aggregate.py [--runs 100000] [--steps 50] [--jobs 2] [--rounds 2]
                                   [--json PATH] [--no-fail] [--keep]

Inputs are what ``llmbench.aggregate.job.read_sweep`` gives the aggregate rule: one run record per
run (as ``read_record`` gives it), one log summary per run (``LogSummary.as_dict`` plus run
id and attempt) and the long frame of every run's parsed steps with a ``run_id`` column. They
come from the catalog: every recipe row with 8 to 1024 GPUs as a ``perf`` run, plus a
``profile`` run at each curve's smallest scale; these keys are repeated (run ids
``<run_id>-<n>``) until there are ``--runs`` runs, so the scaling groups stay the catalog's
two dozen. Step times follow the model's FLOPs at 30-55 % of the datasheet peak; about 5 %
of the runs fail, are killed, are invalid or leave no data, 1 % are a second attempt.

The parent process builds the inputs (not timed) and pickles them; a fresh child loads
them, as the aggregate job holds them, and times
``llmbench.aggregate.job.write_sweep_tables`` (the function the aggregate rule calls once
the run folders are read) stage by stage, then runs one plot_scaling job per group
(``llmbench.report.scaling_plots.plot_group_files``, the glue's call) on ``--jobs``
worker processes, as ``snakemake --cores`` would. Peak RSS (``getrusage``) is
the larger of the child's and any one worker's.

Targets (from the issue): total < 15 s on 2 cores, peak RSS < 4 GB. Also printed, measured
in the same child: total / an irreducible baseline (a pandas groupby-mean of step time over
the same steps frame plus writing the same steps Parquet), and plots / matplotlib's floor
(saving as many one-line figures as SVG and PNG, on the same workers).
Exits 1 when a target is missed, unless ``--no-fail``.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import pickle
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

TARGET_S = 15.0
TARGET_RSS_MB = 4096.0
TRAIN_TOKENS = 1e12
TOLERANCE = 0.05
MIN_GPUS, MAX_GPUS = 8, 1024


class Outcome(NamedTuple):
    """How a synthetic run ends: its log's verdict, the record's exit code and failure
    reason, the share of runs that end so, and the share of ``--steps`` logged."""

    status: str
    reason: str
    exit_code: int | None
    killed_by: str
    share: float
    logged: float


SUCCESS = Outcome("success", "", 0, "", 0.0, 1.0)
OUTCOMES = (
    Outcome("failed", "cuda_oom", 1, "", 0.02, 0.2),
    Outcome("incomplete", "window_incomplete", None, "time_limit", 0.01, 0.6),
    Outcome("incomplete", "final_iteration_missing", 0, "", 0.005, 0.9),
    Outcome("no_data", "no_step_lines", 0, "", 0.005, 0.0),
    Outcome("invalid", "nan_loss", 0, "", 0.005, 1.0),
    Outcome("success", "", 137, "", 0.005, 1.0),  # a full log, but the exit code says failed
)


# --- synthetic inputs (not timed) ----------------------------------------------------------


def catalog_specs(steps: int) -> list[dict[str, Any]]:
    """Run specs of every catalog row with MIN_GPUS..MAX_GPUS GPUs, via the real config."""
    from llmbench.core.catalog import load_catalog
    from llmbench.core.config import run_specs, validate_config

    curves: dict[tuple[str, str, str, str, str], set[int]] = {}
    for row in load_catalog().rows():
        if MIN_GPUS <= row.gpus <= MAX_GPUS:
            key = (row.workload, row.size, row.dtype, row.gpu_type, row.scaling)
            curves.setdefault(key, set()).add(row.gpus)
    sweeps = []
    for (workload, size, dtype, gpu_type, scaling), scales in sorted(curves.items()):
        common = {"workload": workload, "sizes": [size], "dtypes": [dtype],
                  "gpu_type": gpu_type, "scaling": scaling}  # fmt: skip
        sweeps.append({**common, "scales": sorted(scales), "variants": ["perf"]})
        sweeps.append({**common, "scales": [min(scales)], "variants": ["profile"]})
    window = [35, 44] if steps >= 45 else [steps // 2, steps - 1]
    config = validate_config({"sweeps": sweeps, "steps": steps, "window": window})
    return [spec.to_dict() for spec in run_specs(config)]


def expected_step_time_s(spec: dict[str, Any], rng: np.random.Generator) -> float:
    """The model's FLOPs per GPU and step at 30-55 % of the datasheet peak."""
    from llmbench.aggregate.run_facts import model_flops, peak_for

    peak = peak_for(spec, None)
    assert peak is not None
    flops = spec["global_batch_size"] * model_flops(spec["model"]) / spec["gpus"]
    return flops / (peak.flops_per_s * rng.uniform(0.30, 0.55))


def draw_outcomes(n_runs: int, rng: np.random.Generator) -> np.ndarray:
    """Index into OUTCOMES of each run, -1 for a success."""
    kind = np.full(n_runs, -1)
    draw, edge = rng.random(n_runs), 0.0
    for i, outcome in enumerate(OUTCOMES):
        kind[(draw >= edge) & (draw < edge + outcome.share)] = i
        edge += outcome.share
    return kind


def synthetic_inputs(n_runs: int, steps: int, seed: int = 0) -> dict[str, Any]:
    """Records, attempt histories, summaries, the long steps frame and the scaling groups
    of ``n_runs`` runs."""
    from llmbench.parsers.steps import STEP_COLUMNS
    from llmbench.parsers.summary import LogSummary

    rng = np.random.default_rng(seed)
    base = catalog_specs(steps)
    base_step_s = np.array([expected_step_time_s(s, rng) for s in base])
    which = np.arange(n_runs) % len(base)  # the catalog's keys, over and over
    run_ids = [f"{base[k]['run_id']}-{i // len(base)}" for i, k in enumerate(which)]
    kind = draw_outcomes(n_runs, rng)
    outcome = [OUTCOMES[k] if k >= 0 else SUCCESS for k in kind]
    logged = np.array([int(o.logged * steps) for o in outcome])
    attempt = np.where(rng.random(n_runs) < 0.01, 2, 1)

    start = pd.Timestamp("2026-01-01T00:00:00Z")
    prov = {
        "host": "synthetic",
        "git_sha": "0123456789ab",
        "llmbench_version": "0.1.0",
        "python_version": "3.11",
        "torch_version": None,
        "transformers_version": None,
    }
    records = []
    for i, run_id in enumerate(run_ids):
        began = start + pd.Timedelta(seconds=60 * i)
        records.append({
            "run_id": run_id, "attempt": int(attempt[i]), "exit_code": outcome[i].exit_code,
            "failure_reason": outcome[i].killed_by or None,
            "log": f"attempt-{attempt[i]}/train.log",
            "attempt_dir": f"attempt-{attempt[i]}",
            "started_at": began.isoformat(timespec="milliseconds"),
            "finished_at": (began + pd.Timedelta(seconds=600.25)).isoformat(
                timespec="milliseconds"),
            "spec": base[which[i]],  # shared, as json.load would give equal dicts
            "provenance": {**prov, "slurm_job_id": str(100000 + i)},
        })  # fmt: skip
    histories = [(int(a), "1:node_failure" if a == 2 else "") for a in attempt]

    # steps in the framework's numbering (Megatron-Bridge counts from 1), warm-up first
    first = np.array([1 if base[k]["framework"] == "megatron-bridge" else 0 for k in which])
    owner = np.repeat(np.arange(n_runs), logged)
    offset = np.arange(len(owner)) - np.repeat(np.cumsum(logged) - logged, logged)
    iteration = offset + first[owner]
    run_step_s = base_step_s[which] * rng.normal(1.0, 0.02, n_runs)
    warmup = np.where(offset < 3, 3.0 - offset, 1.0)
    step_time_s = run_step_s[owner] * warmup * rng.normal(1.0, 0.01, len(owner))
    columns: dict[str, Any] = {c: np.full(len(owner), np.nan) for c in STEP_COLUMNS}
    columns.update(
        iteration=iteration.astype("int64"),
        step_time_s=step_time_s,
        loss=11.5 - 0.06 * offset + rng.normal(0.0, 0.05, len(owner)),
        tflops_per_gpu=np.where(first[owner] == 1, 400.0 / warmup, np.nan),
        lr=np.full(len(owner), 1e-5),
        global_batch_size=np.array([s["global_batch_size"] for s in base], float)[which][owner],
    )
    steps_long = pd.DataFrame(columns)
    steps_long["run_id"] = pd.Series(np.asarray(run_ids, dtype=object)[owner], dtype="str")

    # summaries: the window statistics of exactly those steps
    lo, hi = base[0]["window"]
    win = (iteration >= lo) & (iteration <= hi)
    stats = pd.DataFrame({"run": owner[win], "t": step_time_s[win]}).groupby("run")["t"]
    mean = stats.mean().reindex(range(n_runs)).to_numpy()
    std = stats.std(ddof=0).reindex(range(n_runs)).to_numpy()
    last = np.where(logged > 0, step_time_s[np.maximum(np.cumsum(logged) - 1, 0)], np.nan)
    measured = np.array([o.status == "success" for o in outcome])
    template = LogSummary(framework="", status="").as_dict()
    summaries = pd.DataFrame({
        **{k: [v] * n_runs for k, v in template.items()},
        "run_id": run_ids, "attempt": attempt,
        "framework": [base[k]["framework"] for k in which],
        "status": [o.status for o in outcome], "reason": [o.reason for o in outcome],
        "n_iterations": logged, "max_iteration": np.where(logged > 0, first + logged - 1, -1),
        "iteration_base": first,
        "step_time_mean_s": np.where(measured, mean, np.nan),
        "step_time_std_s": np.where(measured, std, np.nan),
        "step_time_last_s": last,
        "tflops_per_gpu_mean": np.where(measured & (first == 1), 400.0, np.nan),
        "window": [[lo, hi]] * n_runs,
    })  # fmt: skip

    groups: dict[str, list[str]] = {}
    for k, run_id in zip(which, run_ids, strict=True):
        s = base[k]
        groups.setdefault(f"{s['workload']}_{s['size']}_{s['gpu_type']}_{s['scaling']}",
                          []).append(run_id)  # fmt: skip
    return {"records": records, "histories": histories, "summaries": summaries,
            "steps_long": steps_long, "groups": groups, "catalog_keys": len(base),
            "outcomes": pd.Series([f"{o.status}/{o.reason or '-'}/exit {o.exit_code}"
                                   for o in outcome]).value_counts().to_dict()}  # fmt: skip


# --- the aggregate job (timed, in the child) -------------------------------------------------


class Stages:
    """Wall seconds per named stage. The stages of ``write_sweep_tables`` follow each other
    without a pause, as in the job: its steps table is built on a second thread while the
    runs table, CSV and pages are (``steps_table_wait`` is what they did not hide), and a
    pause to collect garbage between stages would give that thread time nobody counts."""

    def __init__(self, collect: bool = True) -> None:
        self.seconds: dict[str, float] = {}
        self.collect = collect

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        if self.collect:
            gc.collect()  # garbage of an earlier stage is not charged to this one
        start = time.perf_counter()
        result = fn()
        self.seconds[name] = time.perf_counter() - start
        return result


def aggregate_job(data: dict[str, Any], tables: Path, t: Stages) -> float:
    """``llmbench.aggregate.job.write_sweep_tables``, the function the aggregate rule calls after
    reading the run folders, stage by stage; returns the baseline's seconds (measured
    after it, on the same frames)."""
    from llmbench.aggregate.job import OUTPUTS, SweepInputs, write_sweep_tables
    from llmbench.aggregate.reference import references_for

    records, histories = data.pop("records"), data.pop("histories")
    summaries, steps_long = data.pop("summaries"), data.pop("steps_long")
    inputs = SweepInputs(records, histories, [None] * len(records), summaries, steps_long)
    # the aggregate rule's file names (workflow/rules/aggregate.smk)
    names = {"sweep": "sweep.json", "runs": "runs.parquet", "runs_csv": "runs.csv",
             "steps": "steps.parquet", "scaling_md": "scaling.md"}  # fmt: skip
    outputs = {name: tables / names.get(name, name.replace("_html", ".html")) for name in OUTPUTS}
    sweep = {"sweep_id": "benchmark"}
    gc.collect()
    t.collect = False
    _, steps = write_sweep_tables(inputs, sweep, references_for(None), TOLERANCE, TRAIN_TOKENS,
                                  outputs, run_step=t.run)  # fmt: skip

    def baseline() -> None:  # the least any aggregation of these steps does
        steps_long.groupby("run_id", sort=False)["step_time_s"].mean()
        steps.to_parquet(tables / "baseline.parquet", index=False)

    baseline_s = Stages()
    baseline_s.run("baseline", baseline)
    (tables / "baseline.parquet").unlink()
    return baseline_s.seconds["baseline"]


# --- the plot_scaling jobs (in worker processes) --------------------------------------------


def warm_worker() -> None:
    """Imports and the font cache: paid once per snakemake job too, but not llmbench's."""
    import llmbench.report.scaling_plots  # noqa: F401

    plot_floor_s(1)


def plot_job(tables: str, group: str, run_ids: list[str], out: str) -> tuple[int, float]:
    """One group's plot_scaling job: the glue's call. (files written, seconds)"""
    from llmbench.report.scaling_plots import plot_group_files

    start = time.perf_counter()
    tables_dir = Path(tables)
    written = plot_group_files(tables_dir / "runs.parquet", tables_dir / "steps.parquet",
                               run_ids, group, Path(out, group))  # fmt: skip
    return len(written), time.perf_counter() - start


def plot_floor_s(repeats: int) -> float:
    """Seconds to save a one-line figure as SVG and PNG (matplotlib's floor per figure)."""
    import matplotlib.pyplot as plt

    folder = Path(tempfile.mkdtemp(prefix="llmbench-floor-"))
    try:
        start = time.perf_counter()
        for _ in range(repeats):
            fig, ax = plt.subplots(figsize=(6.4, 4.2))
            ax.plot([8, 16, 32, 64], [1.0, 1.1, 1.2, 1.3], marker="o")
            ax.set_xlabel("scale (GPUs)")
            ax.set_ylabel("step time (s)")
            ax.set_title("floor")
            fig.savefig(folder / "f.svg")
            fig.savefig(folder / "f.png", dpi=110)
            plt.close(fig)
        return (time.perf_counter() - start) / repeats
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def plot_jobs(groups: dict[str, list[str]], tables: Path, out: Path, jobs: int,
              rounds: int) -> dict:  # fmt: skip
    """Every group's job on ``jobs`` warm worker processes (wall and summed job seconds),
    then matplotlib's floor for as many figures on the same workers (wall seconds); the
    best of ``rounds`` alternations of the two, so that load from elsewhere on the machine
    inflates both sides alike instead of one."""
    context = multiprocessing.get_context("spawn")  # fresh processes, as snakemake's jobs
    best: dict[str, float] = {}
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=warm_worker) as pool:
        list(pool.map(time.sleep, [0.5] * jobs))  # every worker started and warm
        for _ in range(rounds):
            shutil.rmtree(out, ignore_errors=True)
            start = time.perf_counter()
            futures = [pool.submit(plot_job, str(tables), g, ids, str(out)) for g, ids in
                       groups.items()]  # fmt: skip
            results = [f.result() for f in futures]
            wall = time.perf_counter() - start
            figures = sum(n for n, _ in results) // 2  # a figure is an SVG and a PNG
            start = time.perf_counter()
            list(pool.map(plot_floor_s, [-(-figures // jobs)] * jobs))
            floor = time.perf_counter() - start
            job_s = sum(s for _, s in results)
            for key, value in (("wall_s", wall), ("job_s", job_s), ("floor_s", floor)):
                best[key] = min(best.get(key, value), value)
    return {**best, "files": 2 * figures, "rounds": rounds}


def child(folder: Path, jobs: int, rounds: int) -> dict[str, Any]:
    with open(folder / "inputs.pickle", "rb") as fh:
        data = pickle.load(fh)
    tables, plots = folder / "tables", folder / "plots"
    tables.mkdir()
    t = Stages()
    baseline_s = aggregate_job(data, tables, t)
    gc.collect()
    plotted = plot_jobs(data["groups"], tables, plots, jobs, rounds)
    t.seconds["plots"] = plotted["wall_s"]
    peak_kb = max(resource.getrusage(who).ru_maxrss
                  for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))  # fmt: skip
    return {
        "stages_s": t.seconds,
        "total_s": sum(t.seconds.values()),
        "baseline_s": baseline_s,
        "plot_jobs_sum_s": plotted["job_s"],
        "plot_floor_s": plotted["floor_s"],
        "plot_files": plotted["files"],
        "peak_rss_mb": peak_kb / 1024,
    }


# --- the parent ----------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=50, help="iterations per run")
    parser.add_argument("--jobs", type=int, default=2, help="parallel plot jobs (cores)")
    parser.add_argument("--rounds", type=int, default=2, help="plot rounds (best of each side)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 when a target is missed")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.jobs, args.rounds)))
        return 0

    folder = Path(tempfile.mkdtemp(prefix="llmbench-aggregate-bench-"))
    try:
        start = time.perf_counter()
        data = synthetic_inputs(args.runs, args.steps)
        facts = {
            "runs": args.runs,
            "step_rows": len(data["steps_long"]),
            "catalog_keys": data["catalog_keys"],
            "groups": len(data["groups"]),
            "largest_group_runs": max(len(ids) for ids in data["groups"].values()),
            "outcomes": data.pop("outcomes"),
        }
        with open(folder / "inputs.pickle", "wb") as fh:
            pickle.dump(data, fh, protocol=pickle.HIGHEST_PROTOCOL)
        del data
        facts["generate_s"] = time.perf_counter() - start
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(folder), "--jobs", str(args.jobs),
             "--rounds", str(args.rounds)],
            check=False, capture_output=True, text=True,
        )  # fmt: skip
        if proc.returncode:
            sys.stderr.write(proc.stderr)
            return 2
        result = {**facts, **json.loads(proc.stdout.strip().splitlines()[-1])}
    finally:
        if args.keep:
            print(f"kept {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)

    result.update(
        jobs=args.jobs,
        cpu_count=os.cpu_count(),
        ratio_total_vs_target=result["total_s"] / TARGET_S,
        ratio_total_vs_baseline=result["total_s"] / result["baseline_s"],
        ratio_plots_vs_floor=result["stages_s"]["plots"] / result["plot_floor_s"],
        ratio_rss_vs_target=result["peak_rss_mb"] / TARGET_RSS_MB,
    )
    report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    ok = result["total_s"] < TARGET_S and result["peak_rss_mb"] < TARGET_RSS_MB
    return 0 if ok or args.no_fail else 1


def report(r: dict[str, Any]) -> None:
    print(f"{r['runs']} runs: {r['catalog_keys']} catalog keys repeated, {r['groups']} scaling "
          f"groups (largest {r['largest_group_runs']} runs), {r['step_rows']} step rows; "
          f"inputs built in {r['generate_s']:.1f} s (not timed)")  # fmt: skip
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in r["outcomes"].items()))
    for name, seconds in r["stages_s"].items():
        print(f"  {name:<22} {seconds:7.2f} s")
    print(f"  {'total':<22} {r['total_s']:7.2f} s   / target {TARGET_S:g} s = "
          f"{r['ratio_total_vs_target']:.2f}")  # fmt: skip
    print(f"  baseline (groupby-mean + steps Parquet) {r['baseline_s']:.2f} s: total / baseline "
          f"= {r['ratio_total_vs_baseline']:.1f}")  # fmt: skip
    print(f"  plots: {r['plot_files']} files on {r['jobs']} jobs, {r['plot_jobs_sum_s']:.1f} s "
          f"of job time; matplotlib floor {r['plot_floor_s']:.2f} s: plots / floor = "
          f"{r['ratio_plots_vs_floor']:.2f}")  # fmt: skip
    print(f"  peak RSS {r['peak_rss_mb']:.0f} MB / target {TARGET_RSS_MB:g} MB = "
          f"{r['ratio_rss_vs_target']:.2f}; {r['cpu_count']} CPUs")  # fmt: skip
    print(json.dumps(r))


if __name__ == "__main__":
    sys.exit(main())
