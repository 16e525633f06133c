"""Run with the NeMo venv's interpreter: build and check one NeMo 2 recipe per case.

``python check_recipes.py cases.json results.jsonl``: each case is the entry point's own
argument list (``--spec run_spec.json [variant args] --check-only out.yaml``); NeMo is
imported once for all of them. One JSON line per case: run id, ok, error.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from llmbench.ranks.entrypoints import nemo2
from llmbench.ranks.entrypoints.common import parse_args


def main(cases_file: str, results_file: str) -> None:
    cases = json.loads(Path(cases_file).read_text())
    with open(results_file, "w") as out:
        for argv in cases:
            options = parse_args(argv, "check_recipes", can_check=True)
            result = {"run_id": options.spec.run_id, "argv": argv, "ok": False, "error": None}
            try:
                recipe = nemo2.build_recipe(nemo2.plan(options))
                with open(options.check_only, "w") as yaml_out:
                    yaml_out.write(nemo2.check_recipe(recipe))
                result["ok"] = True
            except Exception as exc:  # every rejection is a result to report, not a crash
                last = traceback.format_exception_only(type(exc), exc)[-1].strip()
                result["error"] = last.splitlines()[0][:500]
            out.write(json.dumps(result) + "\n")
            out.flush()


if __name__ == "__main__":
    main(*sys.argv[1:3])
