"""``llmbench render RUN_ID``: the files one run would get, written to a folder without
submitting or running anything: ``run_spec.json`` (with the parity block: the reference's
settings, image and sources), ``launch.sh``, the platform's manifest or payload, and
``entry_config.json``, what the run's entry point builds from the spec (the recipe, its
arguments and overrides). The same code writes them as a real attempt
(``llmbench.job.runner.write_launch_files``), so a launch can be reviewed before GPU-hours are
spent, and parity audited. RUN_ID is a run of the config, or any catalog row's run id: its
sweep entry is read from the id, with the config's other values (steps, window ...)."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

from llmbench.cli.commands.plan import add_config_arguments, checked_specs, specs_of
from llmbench.core.catalog import load_catalog
from llmbench.core.results_layout import RENDER, RESULTS
from llmbench.core.run_folder import ENTRY_CONFIG as ENTRY_CONFIG_FILE
from llmbench.core.run_ids import RunIdError, sweep_entry_for
from llmbench.core.runspec import RunSpec
from llmbench.core.yamlfile import read_yaml_file
from llmbench.errors import ConfigError
from llmbench.files.new_folder import write_new_folder
from llmbench.job.runner import write_launch_files
from llmbench.launch.entry import entry_module
from llmbench.launch.variants import variant_parts
from llmbench.ranks.entrypoints.common import launch_options

DEFAULT_FOLDER = f"{RESULTS}/{RENDER}"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "render",
        help="write the files one run would get (launch.sh, run_spec.json, manifest, entry "
        "point config) without submitting anything",
        description=__doc__,
    )
    parser.add_argument(
        "run_id",
        metavar="RUN_ID",
        nargs="?",
        help="a run id that `llmbench plan` lists, or any catalog row's "
        "(WORKLOAD_SIZE_DTYPE_GPUTYPExGPUS[-strong][-RELEASE]_VARIANT)",
    )
    add_config_arguments(parser)
    parser.set_defaults(config=None)  # a catalog run id needs none: config.yaml if present
    parser.add_argument(
        "--release",
        help="release of a catalog run id that names none (the id's own release otherwise)",
    )
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


def find_spec(args: argparse.Namespace) -> RunSpec:
    """The run of the config named ``args.run_id``, else the catalog run that id names,
    with the config's other values (no config: the defaults), checked as ``plan`` checks."""
    config = args.config or ("config.yaml" if Path("config.yaml").is_file() else None)
    if config is not None:
        for spec in checked_specs(config, args.site):
            if spec.run_id == args.run_id:
                return spec
    try:
        release = None if args.release is None else load_catalog().release_name(args.release)
        entry = sweep_entry_for(args.run_id, release)
    except RunIdError as err:
        if config is None:
            raise
        sites = "".join(f" --site {s}" for s in args.site)
        raise ConfigError(
            f"run {err.shown} is not in {config} (`llmbench plan --config {config}{sites}` "
            f"lists its runs), nor a catalog run id: {err.reason}"
        ) from None
    experiment = read_yaml_file(config) if config else {}
    if not isinstance(experiment, dict):
        experiment = {}  # checked_specs has refused a config that is not a mapping
    source = f"{config or 'defaults'} with run {args.run_id}"
    specs = specs_of({**experiment, "sweeps": [entry]}, source, args.site)
    return specs[0]


def stack_note(spec: RunSpec) -> str | None:
    """A line when the run would not run in the reference's image: the site sets no
    container, so its ranks run in a Python environment (docs/parity.md)."""
    stack = spec.parity.stack
    if spec.container != "none" or stack is None or not stack.reference_image:
        return None
    return (
        f"note: the site sets no container (container: none): the ranks would run in a "
        f"Python environment, not in the reference's image {stack.reference_image}; "
        "`container: enroot` in the site renders the reference's launch"
    )


def run(args: argparse.Namespace) -> int:
    if args.run_id is None:
        raise ConfigError(
            "RUN_ID is missing; allowed: a run id that `llmbench plan` lists, or a catalog "
            "row's (WORKLOAD_SIZE_DTYPE_GPUTYPExGPUS[-strong][-RELEASE]_VARIANT)"
        )
    spec = find_spec(args)
    out = f"{DEFAULT_FOLDER}/{spec.run_id}" if args.out is None else args.out
    folder, names = write_new_folder(out, lambda tmp: render_run(spec, tmp))
    print(f"{folder}: {', '.join(names)} (nothing submitted)")
    note = stack_note(spec)
    if note:
        print(note)
    return 0
