"""``llmbench transport FILE...``: what NCCL's debug output says about the network a job
used, read the way a train job's transport.json is (docs/transport.md).

FILE is any log with NCCL's INFO lines in it: a run's ``nccl-debug.<host>.<pid>.log``
files, a training job's output, nccl-tests' output. Each field is printed with its value,
why, and the lines that show it; ``unknown`` where the lines cannot tell. ``--nodes`` is the
job's node count where you know it; ``--fabric`` the site's network (``ib``, ``efa``,
``none``): sockets between nodes are a fallback only on ``ib`` or ``efa``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from llmbench.errors import ConfigError
from llmbench.parsers.debug_lines import refusal
from llmbench.parsers.transport import FIELDS, TransportReport, read_transport

FABRICS = ("ib", "efa", "none")
FORMATS = ("table", "json")
MAX_NODES = 1_000_000


def _nodes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_NODES:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; allowed: a whole number of nodes from 1 to {MAX_NODES:,}"
        )
    return value


def register(subparsers: Any) -> None:
    """Add the ``transport`` subcommand."""
    parser = subparsers.add_parser(
        "transport",
        help="the network NCCL used, from any job's NCCL debug output",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="logs with NCCL's lines")
    parser.add_argument("--nodes", type=_nodes, help="the job's node count, where known")
    parser.add_argument("--fabric", choices=FABRICS, help="the site's network")
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    for name in args.files:
        why = refusal(Path(name))
        if why is not None:
            raise ConfigError(f"FILE: {name!r}: {why}; allowed: a log file with NCCL's lines")
    report = read_transport(args.files, nodes=args.nodes, fabric=args.fabric)
    if args.format == "json":
        sys.stdout.write(json.dumps(report.as_dict(), indent=1) + "\n")
    else:
        sys.stdout.write(as_table(report))
    return 0


def as_table(report: TransportReport) -> str:
    """The fields, each with its value and why, and the lines that show it under it."""
    out = [f"{len(report.files)} file(s) read"]
    out += [f"skipped {s['file']}: {s['why']}" for s in report.skipped]
    width = max(len(name) for name in FIELDS)
    for name in FIELDS:
        answer = report.fields[name]
        out.append(f"{name:<{width}}  {answer.value:<22} {answer.why}")
        out += [f"{'':<{width}}    {q.file}:{q.line}: {q.text}" for q in answer.evidence]
    return "\n".join(out) + "\n"
