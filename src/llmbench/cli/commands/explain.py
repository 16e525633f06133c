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

from llmbench.aggregate.explain_inputs import explain_results
from llmbench.aggregate.explanation import as_json, as_text
from llmbench.core.results_layout import RESULTS
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
    parser.add_argument("--results", default=RESULTS, help="the sweep's results folder")
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.runs and not args.all:
        raise ConfigError("RUN: none given; allowed: one or more run ids, or --all")
    explanations = explain_results(Path(args.results), list(args.runs), bool(args.all))
    if args.format == "json":
        sys.stdout.write(as_json(explanations))
    else:
        sys.stdout.write("\n".join(as_text(e) for e in explanations) or "no run to explain\n")
    return 0
