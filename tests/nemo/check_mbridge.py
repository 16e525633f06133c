"""Run with the NeMo venv's interpreter and a Megatron-Bridge folder first on the path:
build and check one Megatron-Bridge config per case with the entry point's own code.

``python check_mbridge.py cases.json results.jsonl``: each case is the entry point's own
argument list (``--spec run_spec.json [variant args] --check-only out.json``); the library
is imported once for all of them. One JSON line per case: its argv, ok, error, and the
versions of the Megatron-Bridge and Megatron-Core that built it.

Each case is built and checked on its row's GPU type and launch environment
(``mbridge_stand_ins.on_row``). With ``LLMBENCH_TE_STAND_IN=VERSION`` (the Megatron-Bridge
0.5 check), the process-wide stand-ins of mbridge_stand_ins.py are installed first.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import mbridge_stand_ins  # beside this script
from case_runner import run_cases  # beside this script (run as a file)

from llmbench.core.runspec import RunSpec
from llmbench.ranks.entrypoints import megatron_bridge


def versions() -> dict[str, str]:
    from megatron.bridge import package_info as bridge
    from megatron.core import package_info as core

    return {"megatron_bridge": bridge.__version__, "megatron_core": core.__version__,
            "megatron_bridge_path": bridge.__file__}  # fmt: skip


def on_its_row(argv: list[str]) -> None:
    """One case on its row's GPU, with the row's environment (what launch.sh exports)."""
    spec = RunSpec.from_dict(json.loads(Path(argv[argv.index("--spec") + 1]).read_text()))
    env = {k: str(v) for k, v in spec.parity.env.items()}
    with mbridge_stand_ins.on_row(spec.gpu_type, env):
        megatron_bridge.main(argv)


if __name__ == "__main__":
    te_version = os.environ.get("LLMBENCH_TE_STAND_IN")
    if te_version:
        mbridge_stand_ins.install(te_version)
    run_cases(sys.argv[1], sys.argv[2], on_its_row, **versions())
