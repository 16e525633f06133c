"""``llmbench parse``: the recipes' ``parse_train_timing`` scripts, for every framework.

Finds the training logs under an experiments folder, parses each with
``llmbench.parsers.parse_log`` and prints one row per experiment (table, CSV or JSON).
Exit status: 0 when at least one experiment succeeded, 1 when none did, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.errors import ConfigError
from llmbench.metrics import DEFAULT_WINDOW
from llmbench.parsers import LogSummary, Status, parse_log

CSV_COLUMNS = (
    "filename",
    "status",
    "time_mean_seconds",
    "time_std_dev_seconds",
    "tflops_per_gpu_mean",
    "tflops_per_gpu_std_dev",
    "max_iteration",
    "framework",
    "reason",
)
SIDE_OUTPUT_DIR_SUFFIXES = ("_nsys", "_nccltrace")  # profiling runs: not valid for timing
SHORT_NAME_CHARS = 90
_WINDOW = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")


@dataclass(frozen=True)
class Experiment:
    name: str  # short name: the experiment, without `log-` and `.out`
    path: Path
    summary: LogSummary


def parse_window(text: str) -> tuple[int, int]:
    """``"35-44"`` -> ``(35, 44)``."""
    match = _WINDOW.match(text)
    if match is None or int(match.group(1)) > int(match.group(2)):
        raise ConfigError(f"--window {text!r}: expected FIRST-LAST with FIRST <= LAST, e.g. 35-44")
    return int(match.group(1)), int(match.group(2))


def is_training_log(path: Path) -> bool:
    """The spec's layouts: `log-<name>.out`, NeMo `*.out`, MaxText `log-maxtext-*.out`,
    and llmbench's `results/runs/<run>/attempt-*/train.log`; never `sbatch_*.out`."""
    if path.name == "train.log":
        return path.parent.name.startswith("attempt-")
    return path.suffix == ".out" and not path.name.startswith("sbatch_")


def find_training_logs(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.endswith(SIDE_OUTPUT_DIR_SUFFIXES))
        for name in sorted(files):
            path = Path(folder, name)
            if is_training_log(path):
                yield path


def experiment_name(path: Path) -> str:
    if path.name == "train.log":
        return f"{path.parent.parent.name}/{path.parent.name}"
    stem = path.stem
    return stem[len("log-") :] if stem.startswith("log-") else stem


def _shorten(name: str) -> str:
    if len(name) <= SHORT_NAME_CHARS:
        return name
    return "..." + name[-(SHORT_NAME_CHARS - 3) :]


def _number(value: float, digits: int) -> str:
    return "" if math.isnan(value) else f"{value:.{digits}f}"


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value


def _json_number(value: float) -> float | None:
    return None if math.isnan(value) else value


def result_row(exp: Experiment, full_names: bool, root: Path) -> dict[str, Any]:
    s = exp.summary
    name = str(exp.path.relative_to(root)) if full_names else _shorten(exp.name)
    return {
        "filename": name,
        "status": s.status,
        "time_mean_seconds": _json_number(s.step_time_mean_s),
        "time_std_dev_seconds": _json_number(s.step_time_std_s),
        "tflops_per_gpu_mean": _json_number(s.tflops_per_gpu_mean),
        "tflops_per_gpu_std_dev": _json_number(s.tflops_per_gpu_std),
        "max_iteration": s.max_iteration if s.max_iteration >= 0 else None,
        "framework": s.framework,
        "reason": s.reason,
    }


def write_table(rows: list[dict[str, Any]], window: tuple[int, int]) -> None:
    print(f"Train Step Timing and TFLOPS Analysis (iterations {window[0]}-{window[1]})")
    print("=" * 80)
    width = max([len("Experiment"), *(len(r["filename"]) for r in rows)])
    headers = ("Status", "Time Mean (s)", "Time Std (s)", "TFLOPS_per_GPU Mean")
    headers += ("TFLOPS_per_GPU Std", "Max Iter", "Reason")
    print(f"{'Experiment':<{width}} " + " ".join(f"{h:>{max(len(h), 10)}}" for h in headers))
    print("-" * width + " " + " ".join("-" * max(len(h), 10) for h in headers))
    for r in rows:
        cells = (
            r["status"],
            _number(_or_nan(r["time_mean_seconds"]), 3),
            _number(_or_nan(r["time_std_dev_seconds"]), 3),
            _number(_or_nan(r["tflops_per_gpu_mean"]), 2),
            _number(_or_nan(r["tflops_per_gpu_std_dev"]), 2),
            "" if r["max_iteration"] is None else str(r["max_iteration"]),
            r["reason"],
        )
        print(
            f"{r['filename']:<{width}} "
            + " ".join(f"{c:>{max(len(h), 10)}}" for c, h in zip(cells, headers, strict=True))
        )


def write_csv(rows: list[dict[str, Any]]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in rows:
        writer.writerow("" if r[c] is None else r[c] for c in CSV_COLUMNS)


def run(args: argparse.Namespace) -> int:
    window = parse_window(args.window)
    root = Path(args.experiments_dir)
    if not root.is_dir():
        raise ConfigError(f"experiments folder {str(root)!r} does not exist")
    experiments = [
        Experiment(experiment_name(p), p, parse_log(p, window).summary)
        for p in find_training_logs(root)
    ]
    rows = [result_row(e, args.full_names, root) for e in experiments]
    successes = sum(e.summary.status == Status.SUCCESS.value for e in experiments)
    if args.format == "csv":
        write_csv(rows)
    elif args.format == "json":
        summary = {
            "success_experiments": successes,
            "failed_experiments": len(rows) - successes,
            "success_rate": successes / len(rows) if rows else 0.0,
        }
        json.dump({"results": rows, "summary": summary}, sys.stdout, indent=2)
        print()
    else:
        write_table(rows, window)
    return 0 if successes else 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "parse",
        help="summarise training logs (step time, TFLOPS/GPU) per experiment",
        description=(
            "Find training logs under EXPERIMENTS_DIR and print, per experiment, the status "
            "and the mean and population std of step time and TFLOPS/GPU over a window "
            "of iterations (numbered as each framework logs them)."
        ),
    )
    parser.add_argument(
        "experiments_dir", nargs="?", default="experiments", metavar="EXPERIMENTS_DIR"
    )
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument("--full-names", action="store_true", help="print log paths in full")
    parser.add_argument(
        "--window",
        default=f"{DEFAULT_WINDOW[0]}-{DEFAULT_WINDOW[1]}",
        help="iterations to average, FIRST-LAST (default %(default)s)",
    )
    parser.set_defaults(func=run)
