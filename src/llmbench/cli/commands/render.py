"""``llmbench render RUN_ID``: the files one run of a config would get, written to a
folder without submitting or running anything: ``run_spec.json`` (with the parity block:
the reference's settings, image and sources), ``launch.sh``, the platform's manifest or
payload, and ``entry_config.json``, what the run's entry point builds from the spec (the
recipe, its arguments and overrides). The same code writes them as a real attempt
(``llmbench.job.runner.write_launch_files``), so a launch can be reviewed before GPU-hours are
spent, and parity audited."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

from llmbench.cli.commands.plan import add_config_arguments, checked_specs
from llmbench.errors import ConfigError
from llmbench.job.runner import write_launch_files
from llmbench.launch.entry import entry_module
from llmbench.launch.variants import variant_parts
from llmbench.ranks.entrypoints.common import launch_options
from llmbench.spec.runspec import RunSpec

ENTRY_CONFIG_FILE = "entry_config.json"
DEFAULT_FOLDER = "results/render"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "render",
        help="write the files one run would get (launch.sh, run_spec.json, manifest, entry "
        "point config) without submitting anything",
        description=__doc__,
    )
    parser.add_argument("run_id", metavar="RUN_ID", help="a run id that `llmbench plan` lists")
    add_config_arguments(parser)
    parser.add_argument(
        "-o",
        "--out",
        metavar="DIR",
        help=f"folder to write; new or empty (default {DEFAULT_FOLDER}/RUN_ID)",
    )
    parser.set_defaults(func=run)


def entry_config(spec: RunSpec) -> dict[str, Any] | None:
    """What the run's entry point builds from the spec (its ``resolved``), with the
    options launch.sh passes it; None for an entry point without one (llmbench's own)."""
    module = importlib.import_module(entry_module(spec))
    if not hasattr(module, "resolved"):
        return None
    args = [str(word).strip('"') for word in variant_parts(spec).entry_args]
    return {"entry_point": module.__name__, **module.resolved(launch_options(spec, args))}


def render_run(spec: RunSpec, folder: Path) -> list[str]:
    """Write the run's files into ``folder`` (an attempt's, and the entry point's config);
    returns their names."""
    names = write_launch_files(spec, folder, attempt=1)
    config = entry_config(spec)
    if config is not None:
        text = json.dumps(config, indent=2, sort_keys=True, default=str) + "\n"
        (folder / ENTRY_CONFIG_FILE).write_text(text)
        names.append(ENTRY_CONFIG_FILE)
    return names


def _folder(path: Path) -> Path:
    """``path``, created; refused when it holds anything (nothing a user ran is
    overwritten)."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise ConfigError(f"-o {path}: not an empty folder; allowed: a new or empty folder")
    path.mkdir(parents=True, exist_ok=True)
    return path


def run(args: argparse.Namespace) -> int:
    by_id = {spec.run_id: spec for spec in checked_specs(args.config, args.site)}
    if args.run_id not in by_id:
        sites = "".join(f" --site {s}" for s in args.site)
        raise ConfigError(
            f"run {args.run_id!r} is not in {args.config}; allowed: a run id that "
            f"`llmbench plan --config {args.config}{sites}` lists"
        )
    spec = by_id[args.run_id]
    folder = _folder(Path(args.out or f"{DEFAULT_FOLDER}/{spec.run_id}"))
    names = render_run(spec, folder)
    print(f"{folder}: {', '.join(names)} (nothing submitted)")
    return 0
