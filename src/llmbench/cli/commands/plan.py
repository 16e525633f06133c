"""``llmbench plan``: the sweep a config describes, with nodes, GPUs and GPU-hours."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from llmbench.launch.launchers import check_platforms, missing_before_start
from llmbench.spec.catalog.published import reference_results
from llmbench.spec.config import check_experiment, merge_config
from llmbench.spec.plan import plan_summary, plan_table, reference_step_times
from llmbench.spec.runspec import RunSpec
from llmbench.spec.yamlfile import read_yaml_file


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
        help="a profile's site file merged over the config, as the profile's `configfile:` "
        "is (e.g. profiles/slurm/site.yaml); repeatable",
    )


def _warn(line: str) -> None:
    print(f"llmbench: warning: {line}", file=sys.stderr)


def checked_specs(config: str, sites: list[str]) -> list[RunSpec]:
    """The runs of ``config`` with the site files merged over it, checked as the workflow
    checks them (schema, catalog, platforms' site values) before anything is submitted."""
    return specs_of(read_yaml_file(config), str(config), sites)


def specs_of(experiment: Any, source: str, sites: list[str]) -> list[RunSpec]:
    """``checked_specs`` of an experiment read already (``source`` names it). A platform's
    missing or bad site value is blamed on the site file that chose the launcher."""
    site: dict = {}
    launcher_from = source
    for path in sites:
        values = read_yaml_file(path) or {}
        if isinstance(values, dict) and "launcher" in values:
            launcher_from = str(path)
        site = merge_config(site, values)
    specs = check_experiment(experiment, site, source, warn=_warn)[1]
    check_platforms(specs, source=launcher_from)
    return specs


def run(args: argparse.Namespace) -> int:
    specs = checked_specs(args.config, args.site)
    secret = missing_before_start(specs)
    if secret:  # the sweep refuses to start without it; a plan may be made elsewhere
        _warn(secret)
    plan = plan_table(specs, reference_step_times(reference_results()))
    summary = plan_summary(plan)
    if args.format == "json":
        records = json.loads(plan.to_json(orient="records"))
        json.dump({"runs": records, "summary": summary}, sys.stdout, indent=2)
        print()
    elif args.format == "csv":
        sys.stdout.write(plan.to_csv(index=False))
    else:
        print(plan.to_string(index=False, na_rep="-", float_format=lambda v: f"{v:,.2f}"))
        print(
            f"\n{summary['runs']} runs, up to {summary['max_nodes']} nodes, "
            f"{summary['est_gpu_hours']:,.1f} GPU-hours estimated "
            f"({summary['runs_without_estimate']} runs without a published step time); "
            f"images to import: {', '.join(summary['images']) or 'none'}"
        )
    return 0
