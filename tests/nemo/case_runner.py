"""The loop the real-framework checker scripts share (run with the framework's venv): each
case is an entry point's argument list; one JSON line per case with ok and the error."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from pathlib import Path


def run_cases(
    cases_file: str, results_file: str, check: Callable[[list[str]], object], **fields: object
) -> None:
    """``check(argv)`` for every case; its exception is the case's result, not a crash.
    ``fields`` are added to every line (e.g. the framework's versions)."""
    cases = json.loads(Path(cases_file).read_text())
    with open(results_file, "w") as out:
        for argv in cases:
            result = {"argv": argv, "ok": False, "error": None, **fields}
            try:
                check(argv)
                result["ok"] = True
            except Exception as exc:  # every rejection is a result to report, not a crash
                last = traceback.format_exception_only(type(exc), exc)[-1].strip()
                result["error"] = last.splitlines()[0][:500]
            out.write(json.dumps(result) + "\n")
            out.flush()
