"""``llmbench recipes``: the catalog, one row per (workload, size, dtype, GPU type, scale,
scaling) with nodes, every parallelism field, the precision recipe and the release."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from typing import Any

from llmbench.core.catalog import ROW_FIELDS, load_catalog
from llmbench.core.catalog.query import RELEASE_ALL
from llmbench.core.runspec import DEFAULT_RELEASE


def register(subparsers: Any) -> None:
    """Add the ``recipes`` subcommand."""
    parser = subparsers.add_parser(
        "recipes", help="list the catalog's recipe rows (every scale and parallelism field)"
    )
    parser.add_argument("--workload", help="only this workload id")
    parser.add_argument("--gpu-type", help="only this GPU type (h100, b200, gb200, gb300)")
    parser.add_argument("--size", help="only this model size")
    parser.add_argument("--dtype", help="only this dtype (bf16, fp8, nvfp4)")
    parser.add_argument(
        "--release",
        default=DEFAULT_RELEASE,
        help=f"only this reference release (default {DEFAULT_RELEASE}: the spec's documents, "
        "formerly named spec; 'all' for every release; e.g. v26.08; any case)",
    )
    parser.add_argument(
        "--include-superseded",
        action="store_true",
        help="also list rows an older document gives where a newer one disagrees",
    )
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.set_defaults(func=run)


def _cell(value: Any) -> str:
    if value is None:
        return "NA"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_table(records: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """Fixed-width text table with a header row."""
    cells = [[_cell(r[c]) for c in columns] for r in records]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Print the selected catalog rows; ConfigError (exit 2) for unknown names. An empty
    selection prints no table and one line on stderr saying which filter emptied it."""
    catalog = load_catalog()
    name = catalog.release_name(args.release, allow_all=True)
    release = None if name == RELEASE_ALL else name
    filters = {"workload": args.workload, "size": args.size, "dtype": args.dtype,
               "gpu_type": args.gpu_type}  # fmt: skip
    rows = catalog.rows(**filters, include_superseded=args.include_superseded, release=release)
    if not rows:
        why = catalog.why_no_rows(filters, release, args.include_superseded)
        print(f"llmbench recipes: no rows: {why}", file=sys.stderr)
        if args.format == "table":
            return 0
    records = [r.as_dict() for r in rows]
    if args.format == "json":
        json.dump(records, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.format == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(ROW_FIELDS)
        writer.writerows([_cell(r[c]) for c in ROW_FIELDS] for r in records)
    else:
        print(render_table(records, ROW_FIELDS))
    return 0
