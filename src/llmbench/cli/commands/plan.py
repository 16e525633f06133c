"""``llmbench plan``: the sweep a config describes, with nodes, GPUs and GPU-hours."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from llmbench.core.catalog.published import reference_results
from llmbench.core.config import Host, check_experiment, default_base_dirs
from llmbench.core.plan import plan_summary, plan_table, published_steps
from llmbench.core.runspec import RunSpec
from llmbench.core.site_file import read_site_files
from llmbench.core.site_fit import site_refusal
from llmbench.core.yamlfile import read_yaml_file
from llmbench.launch.launchers import check_platforms, missing_before_start
from llmbench.text import counted


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="print the runs a config expands to, with nodes, GPUs and estimated GPU-hours",
        description=__doc__,
    )
    add_config_arguments(parser)
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.set_defaults(func=run)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config`` and ``--site``, as ``checked_specs`` reads them."""
    parser.add_argument("--config", default="config.yaml", help="sweep config (YAML)")
    parser.add_argument(
        "--site",
        action="append",
        default=[],
        metavar="FILE",
        help="a profile's site file merged over the config, as the profile merges it (e.g. "
        "profiles/slurm/site.yaml); repeatable",
    )


def _warn(line: str) -> None:
    print(f"llmbench: warning: {line}", file=sys.stderr)


def checked_sweep(config: str, sites: list[str]) -> tuple[dict[str, Any], list[RunSpec]]:
    """The config of ``config`` with the site files merged over it, and its runs, checked
    as the workflow checks them (schema, catalog, platforms' site values) before anything
    is submitted."""
    return sweep_of(read_yaml_file(config), str(config), sites)


def checked_specs(config: str, sites: list[str]) -> list[RunSpec]:
    """The runs of ``checked_sweep``."""
    return checked_sweep(config, sites)[1]


def sweep_of(
    experiment: Any, source: str, sites: list[str]
) -> tuple[dict[str, Any], list[RunSpec]]:
    """``checked_sweep`` of an experiment read already (``source`` names it). A platform's
    missing or bad site value is blamed on the site file that chose the launcher."""
    launcher_from = source
    for path in sites:
        values = read_site_files([path])
        if "launcher" in values:
            launcher_from = str(path)
    here = Host(cores=os.cpu_count() or 1, environ=os.environ)
    checked, specs = check_experiment(
        experiment, read_site_files(sites), source, warn=_warn, host=here
    )
    check_platforms(specs, source=launcher_from)
    return checked, specs


def specs_of(experiment: Any, source: str, sites: list[str]) -> list[RunSpec]:
    """The runs of ``sweep_of``."""
    return sweep_of(experiment, source, sites)[1]


def run(args: argparse.Namespace) -> int:
    config, specs = checked_sweep(args.config, args.site)
    # What the workflow refuses on this site is a warning here: a plan is often made
    # before the site is chosen (no --site: launcher local).
    refused = site_refusal(specs, config, default_base_dirs(), os.environ)
    if refused:
        where = ", ".join(args.site) or "no --site: launcher local"
        _warn(f"the workflow refuses this sweep on this site ({where}): {refused}")
    secret = missing_before_start(specs)
    if secret:  # the sweep refuses to start without it; a plan may be made elsewhere
        _warn(secret)
    plan = plan_table(specs, published_steps(reference_results()))
    summary = plan_summary(plan)
    if args.format == "json":
        records = json.loads(plan.to_json(orient="records"))
        json.dump({"runs": records, "summary": summary}, sys.stdout, indent=2)
        print()
    elif args.format == "csv":
        sys.stdout.write(plan.to_csv(index=False))
    else:
        print(plan.to_string(index=False, na_rep="-", float_format=lambda v: f"{v:,.2f}"))
        print(f"\n{summary_line(summary)}")
    return 0


def summary_line(summary: dict[str, Any]) -> str:
    """The plan's last line: runs, nodes, the suite's GPU-hours and where they come from,
    images to import."""
    how = [
        f"{summary['runs_published']:,} at a published step time",
        f"{summary['runs_estimated']:,} estimated from another scale, GBS, dtype or GPU type",
    ]
    if summary["runs_without_estimate"]:
        how.append(f"{summary['runs_without_estimate']:,} without an estimate")
    images = ", ".join(summary["images"]) or "none"
    return (
        f"{counted(summary['runs'], 'run')}, up to {counted(summary['max_nodes'], 'node')}: "
        f"{summary['est_gpu_hours']:,.1f} GPU-hours in all ({'; '.join(how)}; "
        "docs/metrics.md); images to import: " + images
    )
