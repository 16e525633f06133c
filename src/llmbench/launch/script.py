"""The ``launch.sh`` of one run attempt."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from llmbench import __version__
from llmbench.errors import LaunchError
from llmbench.runspec import RunSpec

SPEC_FILE = "run_spec.json"
LOG_FILE = "train.log"


def embedded_entry_point(spec_file: str = SPEC_FILE) -> list[str]:
    """The tiny trainer's command, after the interpreter."""
    return ["-m", "llmbench.embedded.train", "--spec", spec_file]


def local_rank_launcher(spec: RunSpec) -> list[str]:
    """torchrun on this machine: one process per rank, as a cluster job starts ranks."""
    return [
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nnodes=1",
        f"--nproc-per-node={spec.gpus}",
    ]


def _join(words: Sequence[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def render_launch_script(spec: RunSpec) -> str:
    """The bash script run in the attempt folder; stdout and stderr become the train log."""
    if spec.framework != "torch":
        raise LaunchError(
            f"framework={spec.framework!r}: no launcher in this build; allowed: torch"
        )
    if spec.launcher != "local":
        raise LaunchError(f"launcher={spec.launcher!r}: not supported yet; allowed: local")
    command = local_rank_launcher(spec) + embedded_entry_point()
    return "\n".join(
        [
            "#!/usr/bin/env bash",
            f"# llmbench {__version__}: run {spec.run_id}",
            "# Exactly what this attempt executed; rerun by hand with: bash launch.sh",
            "set -euo pipefail",
            'cd "$(dirname "$0")"',
            f"export OMP_NUM_THREADS={spec.threads_per_rank}",
            'PYTHON="${LLMBENCH_PYTHON:-python3}"',
            f'exec "$PYTHON" {_join(command)}',
            "",
        ]
    )
