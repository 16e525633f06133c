"""Run with the NeMo venv's interpreter and the Megatron-Bridge folder first on the path:
build and check one Megatron-Bridge config per case with the entry point's own code.

``python check_mbridge.py cases.json results.jsonl``: each case is the entry point's own
argument list (``--spec run_spec.json [variant args] --check-only out.json``); the library
is imported once for all of them. One JSON line per case: its argv, ok, error, and the
versions of the Megatron-Bridge and Megatron-Core that built it.
"""

from __future__ import annotations

import sys

from case_runner import run_cases  # beside this script (run as a file)

from llmbench.ranks.entrypoints import megatron_bridge


def versions() -> dict[str, str]:
    from megatron.bridge import package_info as bridge
    from megatron.core import package_info as core

    return {"megatron_bridge": bridge.__version__, "megatron_core": core.__version__,
            "megatron_bridge_path": bridge.__file__}  # fmt: skip


if __name__ == "__main__":
    run_cases(sys.argv[1], sys.argv[2], megatron_bridge.main, **versions())
