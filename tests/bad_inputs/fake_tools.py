"""Stand-ins for the tools a GPU node's preflight asks (``nvidia-smi``, ``dcgmi``,
``all_reduce_perf``, ``sinfo``), each switched by an environment variable to what a sick
node or a broken controller does: answer as a healthy H100 node would, print garbage,
random bytes, nothing or hundreds of megabytes, fail, or hang. A hung stand-in writes its
PID to ``$FAKE_PIDS`` and then becomes ``sleep`` (``exec``), so a test can tell that it
was stopped."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

FAKES = Path(__file__).parent / "fake-tools"
"""The stand-ins as scripts: ``nvidia-smi`` (``FAKE_SMI``, ``FAKE_L`` for ``-L``,
``FAKE_GPUS``), ``dcgmi`` (``FAKE_DCGM``), ``all_reduce_perf`` (``FAKE_NCCL``), ``sinfo``
(``FAKE_SINFO``, ``FAKE_N``); the modes are the cases of each script."""


def install(bin_dir: Path) -> Path:
    """Copy every stand-in into ``bin_dir`` (executable); returns it."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for source in FAKES.iterdir():
        path = bin_dir / source.name
        shutil.copyfile(source, path)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def hung_pids(pid_file: Path) -> list[int]:
    """The PIDs the hung stand-ins wrote."""
    if not pid_file.exists():
        return []
    return [int(line) for line in pid_file.read_text().split()]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def end(pids: list[int]) -> None:
    """Stop stand-ins a failed test left running (by PID, ours only)."""
    for pid in pids:
        if alive(pid):
            os.kill(pid, 9)
