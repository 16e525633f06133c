"""Run with the NeMo venv's interpreter: build and check one NeMo 2 recipe per case.

``python check_recipes.py cases.json results.jsonl``: each case is the entry point's own
argument list (``--spec run_spec.json [variant args] --check-only out.yaml``); NeMo is
imported once for all of them. One JSON line per case: its argv, ok, error.
"""

from __future__ import annotations

import sys

from case_runner import run_cases  # beside this script (run as a file)

from llmbench.ranks.entrypoints import nemo2
from llmbench.ranks.entrypoints.common import parse_args


def check(argv: list[str]) -> None:
    options = parse_args(argv, "check_recipes", can_check=True)
    recipe = nemo2.build_recipe(nemo2.plan(options))
    with open(options.check_only, "w") as yaml_out:
        yaml_out.write(nemo2.check_recipe(recipe))


if __name__ == "__main__":
    run_cases(sys.argv[1], sys.argv[2], check)
