"""``llmbench compare A B``: step time of B against A per key, with confidence intervals
and verdicts; exits 1 when a key is slower beyond the tolerance (docs/history.md).

A and B are sweeps (an id, latest, latest~N), clusters, date ranges or combinations
(``cluster=eos,date=2025-03-01..2025-03-31``), ``published`` (the spec's step times), or
results folders (``results/``: no history needed).
"""

from __future__ import annotations

import argparse
import sys

from llmbench.files.atomic import create_new, new_output
from llmbench.history.compare import compare
from llmbench.history.location import history_from
from llmbench.history.render import FORMATS, render
from llmbench.history.stats import CONFIDENCE, TOLERANCE


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare two sweeps, clusters or date ranges (or one with the published numbers)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "a", help="baseline: sweep id, latest[~N], cluster=, date=, published, results folder"
    )
    parser.add_argument("b", help="compared with the baseline (same forms)")
    parser.add_argument("--history", help="folder or URL (default: history.path of --config)")
    parser.add_argument("--config", default="config.yaml", help="config with history.path")
    parser.add_argument(
        "--tolerance", type=float, default=TOLERANCE, help="step-time change judged the same"
    )
    parser.add_argument("--confidence", type=float, default=CONFIDENCE, help="of the intervals")
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.add_argument("--output", help="write there instead of to stdout (never replaces a file)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = new_output(args.output, "--output") if args.output else None
    history = history_from(args.history, args.config)
    comparison = compare(history, args.a, args.b, args.tolerance, args.confidence)
    for line in comparison.skipped:
        print(f"llmbench compare: warning: {line}", file=sys.stderr)
    text = render(comparison, args.format)
    if out is not None:
        create_new(out, lambda tmp: tmp.write_text(text), "--output")
    else:
        sys.stdout.write(text)
    return 1 if comparison.regressions else 0
