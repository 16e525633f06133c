"""``llmbench explain RUN ...``: why a run missed its reference, from the evidence the
sweep's results hold (NCCL's transport, preflight, telemetry, step times, the launch
against the reference's), ranked by how much each item could explain (docs/explain.md).

``--all`` explains every run whose verdict is slower or that has none; ``--format json``
prints a list of explanations for CI.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from llmbench.aggregate.explain import as_json, as_text, explain_runs
from llmbench.errors import ConfigError

FORMATS = ("text", "json")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="why a run missed its reference: the evidence llmbench holds, ranked",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("runs", nargs="*", metavar="RUN", help="run id(s) of the runs table")
    parser.add_argument("--all", action="store_true", help="every run slower or without verdict")
    parser.add_argument("--results", default="results", help="the sweep's results folder")
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    results = Path(args.results)
    table = results / "tables" / "runs.parquet"
    if not table.is_file():
        raise ConfigError(
            f"--results: {str(table)!r} does not exist; allowed: a results folder the "
            "workflow's aggregate step wrote"
        )
    if not args.runs and not args.all:
        raise ConfigError("RUN: none given; allowed: one or more run ids, or --all")
    runs = pd.read_parquet(table)
    unknown = [r for r in args.runs if r not in set(runs["run_id"])]
    if unknown:
        known = sorted(runs["run_id"].astype(str))
        shown = ", ".join(known[:5]) + (f" ... ({len(known)} runs)" if len(known) > 5 else "")
        raise ConfigError(f"RUN: {unknown[0]!r} is not in {table}; allowed: {shown}")
    chosen = runs if args.all and not args.runs else runs[runs["run_id"].isin(args.runs)]
    steps_file = results / "tables" / "steps.parquet"
    ids = list(chosen["run_id"].astype(str))
    steps = None
    if steps_file.is_file() and ids:  # only the chosen runs' rows of a large table
        steps = pd.read_parquet(steps_file, filters=[("run_id", "in", ids)])
    explanations = explain_runs(results, chosen, steps, only_unexplained=bool(args.all))
    if args.format == "json":
        sys.stdout.write(as_json(explanations))
    else:
        sys.stdout.write("\n".join(as_text(e) for e in explanations) or "no run to explain\n")
    return 0
