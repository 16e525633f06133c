"""``llmbench parse``: the recipes' ``parse_train_timing`` scripts, for every framework.

Finds the training logs under an experiments folder (or takes the one log file it is
given), parses each with ``llmbench.parsers.parse_log`` and prints one row per experiment
(table, CSV or JSON). A log that cannot be read gets its own row (``no_data``,
``unreadable``) and the others are still parsed. Exit status: 0 when at least one
experiment succeeded, 1 when none did (or no log was found), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.core import run_folder
from llmbench.core.metrics import DEFAULT_WINDOW
from llmbench.errors import ConfigError, ParseError
from llmbench.parsers import (
    WINDOW_SYNTAX,
    LogSummary,
    Reason,
    Status,
    Window,
    as_window,
    parse_log,
)
from llmbench.parsers.summary import no_data_summary

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
    "log_interval",
    "restarts",
    "flags",
)
SIDE_OUTPUT_DIR_SUFFIXES = ("_nsys", "_nccltrace")  # profiling runs: not valid for timing
SHORT_NAME_CHARS = 90


@dataclass(frozen=True)
class Experiment:
    name: str  # short name: the experiment, without `log-` and `.out`
    path: Path
    summary: LogSummary


def parse_window(text: str) -> Window:
    """``"35-44"`` or ``"last:10"`` -> ``Window``; ``ConfigError`` names the option."""
    try:
        return as_window(text)
    except ConfigError as err:
        raise ConfigError(f"--{err}") from None


def is_training_log(path: Path) -> bool:
    """The spec's layouts: `log-<name>.out`, NeMo `*.out`, MaxText `log-maxtext-*.out`,
    and llmbench's `results/runs/<run>/attempt-*/train.log`; never `sbatch_*.out`."""
    if path.name == run_folder.LOG:
        return path.parent.name.startswith(run_folder.ATTEMPT_PREFIX)
    return path.suffix == ".out" and not path.name.startswith("sbatch_")


def find_training_logs(root: Path) -> Iterator[Path]:
    """Training logs under ``root`` by name, in a stable order (symlinked folders are not
    followed; a file that is not a regular one is still yielded, to be reported)."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.endswith(SIDE_OUTPUT_DIR_SUFFIXES))
        for name in sorted(files):
            path = Path(folder, name)
            if is_training_log(path):
                yield path


def experiment_name(path: Path) -> str:
    if path.name == run_folder.LOG and path.parent.name.startswith(run_folder.ATTEMPT_PREFIX):
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
        "log_interval": s.log_interval,
        "restarts": s.restarts,
        "flags": s.flags,
        "detail": s.detail,
    }


def unreadable_summary(err: ParseError) -> LogSummary:
    """The row of a log that could not be read: no data, and why."""
    return no_data_summary(Reason.UNREADABLE, str(err))


def parse_one(path: Path, window: Window, peak_tflops: float | None) -> LogSummary:
    try:
        return parse_log(path, window, peak_tflops=peak_tflops).summary
    except ParseError as err:
        print(f"llmbench parse: warning: {err}", file=sys.stderr)
        return unreadable_summary(err)


def _window_title(window: Window) -> str:
    if window.last_points is not None:
        return f"the last {window.last_points} logged points"
    return f"iterations {window.first}-{window.last}"


def write_table(rows: list[dict[str, Any]], window: Window) -> None:
    print(f"Train Step Timing and TFLOPS Analysis ({_window_title(window)})")
    print("=" * 80)
    width = max([len("Experiment"), *(len(r["filename"]) for r in rows)])
    headers = ("Status", "Time Mean (s)", "Time Std (s)", "TFLOPS_per_GPU Mean")
    headers += ("TFLOPS_per_GPU Std", "Max Iter", "Interval", "Restarts", "Reason", "Flags")
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
            str(r["log_interval"]),
            str(r["restarts"]),
            r["reason"],
            r["flags"],
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
    if root.is_dir():
        logs = list(find_training_logs(root))
    elif root.exists() or root.is_symlink():  # one log (a pipe or a link loop: reported)
        logs, root = [root], root.parent
    else:
        raise ConfigError(f"experiments folder or log {str(root)!r} does not exist")
    if not logs:
        print(
            f"llmbench parse: no training log found under {str(root)!r} (looked for "
            "log-*.out, *.out and attempt-*/train.log)",
            file=sys.stderr,
        )
    experiments = [
        Experiment(experiment_name(p), p, parse_one(p, window, args.peak_tflops)) for p in logs
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


def _peak(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive number of TFLOPS")
    return value


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
        "experiments_dir",
        nargs="?",
        default="experiments",
        metavar="EXPERIMENTS_DIR",
        help="a folder of experiments, or one log file (default %(default)s)",
    )
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument("--full-names", action="store_true", help="print log paths in full")
    parser.add_argument(
        "--window",
        default=f"{DEFAULT_WINDOW[0]}-{DEFAULT_WINDOW[1]}",
        help=f"what to average: {WINDOW_SYNTAX} (default %(default)s)",
    )
    parser.add_argument(
        "--peak-tflops",
        type=_peak,
        default=None,
        metavar="TFLOPS",
        help="the device's datasheet peak: logged TFLOPS above it are flagged "
        "(default: the highest peak in the catalog)",
    )
    parser.set_defaults(func=run)
