"""The training venv in the stage folder: ``python -m venv`` + pinned requirements.

The framework workloads' entry points run with this venv's interpreter (``container:
none``) or use it on the host to locate llmbench's source (``container: enroot``).
llmbench itself is not installed into it: a ``.pth`` file puts this checkout's source on
its path, so the entry points always match the workflow that rendered their launch.sh.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from llmbench.errors import LaunchError
from llmbench.files.atomic import write_text_atomic

PTH_FILE = "llmbench-src.pth"
IMPORT_CHECK = "import llmbench.ranks.entrypoints.common"


def _run(command: Sequence[str | Path], what: str, log: Path | None) -> str:
    proc = subprocess.run([str(c) for c in command], capture_output=True, text=True, check=False)
    if log is not None:
        with log.open("a") as out:
            out.write(f"$ {' '.join(map(str, command))}\n{proc.stdout}{proc.stderr}\n")
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise LaunchError(f"venv: {what} failed (exit {proc.returncode}): {tail}")
    return proc.stdout


def source_root() -> Path:
    """The folder that holds the ``llmbench`` package (``src/`` in a checkout)."""
    return Path(__file__).resolve().parents[2]


def build_venv(
    venv_dir: str | Path,
    requirements: str | Path,
    marker: str | Path,
    python: str = sys.executable,
    log: str | Path | None = None,
    precompile: bool = True,
) -> Path:
    """Create (or recreate) ``venv_dir``, install ``requirements``, then write ``marker``.
    ``precompile=False`` leaves the bytecode to each module's first import (pip's
    ``--no-compile``), for a venv of which most modules are never imported.

    The marker is written last and atomically, so a venv without it is an unfinished
    build (and ``--clear`` starts it again). It holds the interpreter, the requirements'
    sha256 and ``pip freeze``: what the runs used, for provenance.
    """
    venv = Path(venv_dir)
    req = Path(requirements)
    if not req.is_file():
        raise LaunchError(f"venv: requirements file {req} does not exist")
    log_path = Path(log) if log else None
    _run([python, "-m", "venv", "--clear", venv], "python -m venv", log_path)
    vpython = venv / "bin" / "python"
    pip = [vpython, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    install = [*pip, "install", *([] if precompile else ["--no-compile"]), "-r", req]
    _run(install, f"pip install -r {req}", log_path)
    purelib = _run(
        [vpython, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        "locating site-packages",
        log_path,
    ).strip()
    (Path(purelib) / PTH_FILE).write_text(f"{source_root()}\n")
    _run([vpython, "-c", IMPORT_CHECK], "importing llmbench's entry points", log_path)
    frozen = _run([*pip, "freeze", "--all"], "pip freeze", log_path)
    version = _run([vpython, "--version"], "python --version", log_path).strip()
    digest = hashlib.sha256(req.read_bytes()).hexdigest()
    header = f"# {version}\n# requirements: {req} sha256={digest}\n"
    return write_text_atomic(header + frozen, marker)
