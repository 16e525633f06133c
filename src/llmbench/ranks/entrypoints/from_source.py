"""Run an entry point from a source tree that is not installed (a container's mount):

    python3 <src>/llmbench/ranks/entrypoints/from_source.py \
        llmbench.ranks.entrypoints.nemo2 --spec ...

The image needs no llmbench install and keeps its own ``PYTHONPATH``: this file puts its
source tree first on ``sys.path`` and runs the named entry point as ``__main__``. The
one place that bootstraps the path, so the entry points themselves are plain modules.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

PACKAGE = "llmbench.ranks.entrypoints."


def main(argv: list[str]) -> None:
    if len(argv) < 2 or not argv[1].startswith(PACKAGE):
        sys.exit(f"usage: python3 {argv[0]} {PACKAGE}<name> [arguments]")
    # Python put this file's folder first; the entry points import from the source tree.
    sys.path[0] = str(Path(__file__).resolve().parents[3])
    module = argv[1]
    sys.argv = [argv[0], *argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv)
