"""``llmbench history``: add a sweep's tables to the history, list the sweeps it holds.

``list`` checks every record it shows; a damaged one is left out with a warning line
naming the file, and the exit status is then 1 (docs/history.md, "Checked reads")."""

from __future__ import annotations

import argparse
import json
import sys

from llmbench.history.location import require_history
from llmbench.history.read import SweepReader
from llmbench.history.select import Selector, parse_selector, resolve
from llmbench.history.store import add_sweep

LIST_COLUMNS = (
    "sweep_id", "cluster", "date", "created_at", "runs", "steps", "llmbench_version",
    "git_sha", "config_sha256",
)  # fmt: skip


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "history", help="add sweeps to the history and list them", description=__doc__
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="append a results folder's sweep to the history")
    add.add_argument("results", help="the sweep's results folder (with tables/sweep.json)")
    show = actions.add_parser("list", help="list the sweeps in the history")
    show.add_argument(
        "selector", nargs="?", default=None, help="e.g. cluster=eos,date=2025-03-01..2025-03-31"
    )
    show.add_argument("--format", choices=("table", "csv", "json"), default="table")
    for sub in (add, show):
        sub.add_argument("--history", help="folder or URL (default: history.path of --config)")
        sub.add_argument("--config", default="config.yaml", help="config with history.path")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    history = require_history(args.history, args.config)
    if args.action == "add":
        added = add_sweep(history, args.results)
        state = "added to" if added.new else "already in"
        print(f"sweep {added.sweep_id} {state} {added.path}")
        return 0
    selector = parse_selector(args.selector) if args.selector else Selector("all sweeps")
    columns = [c for c in LIST_COLUMNS if c not in ("cluster", "date")]
    reader = SweepReader(history)
    sweeps = reader.read(resolve(history, selector), "sweep", columns)
    frame = sweeps.loc[:, list(LIST_COLUMNS)].sort_values("sweep_id", ignore_index=True)
    frame["checked"] = ["no" if s in reader.unchecked else "sha256" for s in frame["sweep_id"]]
    if args.format == "json":
        json.dump(json.loads(frame.to_json(orient="records")), sys.stdout, indent=2)
        print()
    elif args.format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    else:
        shown = frame.assign(config_sha256=frame["config_sha256"].str.slice(0, 12))
        print(shown.to_string(index=False, na_rep="-"))
        print(f"\n{len(frame)} sweeps in {history.where}")
    for skipped in reader.skipped.values():
        print(f"llmbench history: warning: {skipped.line()}", file=sys.stderr)
    return 1 if reader.skipped else 0
