"""``llmbench archive``: one ``.tar.zst`` of a sweep (logs, run records, launch scripts,
tables, plots, report) with a sha256 manifest; ``--verify`` checks one.

Nsight Systems reports and trace dumps are left out unless asked for; credential files
and token-looking values never go in (docs/history.md, "Archives").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from llmbench.aggregate.result_file import RESULT_FILE, result_file_problem
from llmbench.history.archive import create_archive, verify_archive


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "archive",
        help="pack a sweep's results into one .tar.zst with a manifest, or verify one",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("path", help="results folder (or, with --verify, an archive)")
    parser.add_argument("--verify", action="store_true", help="check an archive's members")
    parser.add_argument("-o", "--output", help="archive file (default: <sweep id>.tar.zst)")
    parser.add_argument("--report", help="a report file to include (snakemake --report)")
    parser.add_argument("--with-profiles", action="store_true", help="include nsys reports")
    parser.add_argument("--with-traces", action="store_true", help="include trace dumps")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.verify:
        verified = verify_archive(args.path)
        print(f"{verified.path}: sweep {verified.sweep_id}, {verified.members} members verified")
        return 0
    created = create_archive(
        args.path, args.output, args.with_profiles, args.with_traces, args.report
    )
    damaged = result_file_problem(Path(args.path) / RESULT_FILE)
    if damaged:  # archived as it is: an archive keeps what the folder holds
        print(f"llmbench archive: warning: {damaged} (archived as it is)", file=sys.stderr)
    counts = [f"{len(paths)} {kind}" for kind, paths in created.left_out.items() if paths]
    left = ", ".join(counts) or "nothing"
    print(f"{created.path}: {created.members} members; left out: {left}")
    return 0
