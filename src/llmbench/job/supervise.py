"""Run one launch command to its end, and never longer than its limits.

The command (``bash launch.sh``) starts in a session of its own, its output going to the
training log. Every poll the supervisor notes the command's whole process tree (torchrun
starts its ranks in sessions of their own, so a process group alone would miss them) and
the log's size. It ends the run when:

- the run's time limit has passed (``timeout``), or
- the log has not grown for the startup allowance (before the first training step) or
  the stall allowance (after it) (``hang``): first it saves a stack dump of each stuck
  process beside the log (``py-spy dump --native`` where py-spy can attach, else the
  rank's own faulthandler via ``STACK_SIGNAL``), or
- the workflow process that runs this job is gone (``workflow_lost``): Snakemake was
  killed, nobody waits for the run, and its ranks would go on taking the cores of the
  next invocation's runs. The job's parent is Snakemake or a wrapper that outlives it (a
  ``bash -c`` that did not exec, a conda or container prefix), and a parent-death signal
  reaches only the process that asked for it, not the ranks in their own sessions: so the
  supervisor polls the workflow process itself
  (``llmbench.job.sweep_processes.workflow_process``) and ends the tree as for a limit.

Ending means SIGTERM to every process of the tree, by PID (checked against its start time,
so a reused PID is never hit), SIGKILL to what is left after a grace period; processes of
the run still alive after a normal exit are ended the same way. Nothing is ever killed by
name. The same happens when the supervisor itself is told to stop (SIGTERM from Snakemake
or ``scancel``, SIGINT, SIGHUP): the run's tree lives in sessions of its own and would
otherwise outlive it; then the supervisor dies of that signal.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from llmbench.core.limits import RunLimits
from llmbench.core.run_folder import RANK_STACK_GLOB, pid_stack_name
from llmbench.ranks.stack_dumps import STACK_SIGNAL, catches_stack_signal, drop_empty_stack_files

POLL_S = 2.0
GRACE_S = 15.0
"""SIGTERM to SIGKILL: srun and torchrun pass SIGTERM on to the ranks and wait for them."""
STACK_DUMP_TIMEOUT_S = 60.0
DETAIL_CHARS = 200


class Ended:
    """Why the supervisor ended a run (``Outcome.ended_by``)."""

    TIMEOUT = "timeout"
    HANG = "hang"
    WORKFLOW_LOST = "workflow_lost"


@dataclass(frozen=True)
class Outcome:
    exit_code: int | None  # the command's exit status; negative: ended by that signal
    ended_by: str = ""  # "" or an ``Ended`` value
    detail: str = ""  # what the watchdog saw: limit, silence, last log line
    stack_dumps: tuple[str, ...] = ()  # file names beside the log
    leftover_processes: int = 0  # processes of the run still alive after it exited
    wall_s: float = 0.0


@dataclass
class _Tree:
    """Every process seen in the command's tree, and the run's processes outside it (the
    ranks srun starts under slurmstepd): pid -> psutil handle (start time kept)."""

    root: psutil.Process
    outside: Callable[[], Iterable[int]] | None = None
    seen: dict[int, psutil.Process] = field(default_factory=dict)

    def refresh(self) -> None:
        with contextlib.suppress(psutil.Error):  # the root is gone; what was seen stays
            for proc in [self.root, *self.root.children(recursive=True)]:
                self.seen.setdefault(proc.pid, proc)
        for pid in self.outside() if self.outside else ():
            if pid not in self.seen:
                with contextlib.suppress(psutil.Error):
                    self.seen[pid] = psutil.Process(pid)

    def alive(self) -> list[psutil.Process]:
        # is_running() compares the start time too, so a reused PID is not ours
        return [p for p in self.seen.values() if _running(p)]


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _Stopped(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, _frame: object) -> None:
    raise _Stopped(signum)


@contextlib.contextmanager
def _stop_signals_raise() -> Iterator[None]:
    """While supervising, a stop signal raises ``_Stopped`` (signal handlers can only be
    set from the main thread; elsewhere the caller's handlers stay). A signal this process
    ignores stays ignored: under ``nohup`` a hangup must not end the run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {
        sig: signal.signal(sig, _raise_stopped)
        for sig in STOP_SIGNALS
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _ignore_stop_signals() -> None:
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def supervise(
    command: Sequence[str],
    log_path: Path,
    limits: RunLimits,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    has_started: Callable[[Path], bool] = lambda _: True,
    outside_pids: Callable[[], Iterable[int]] | None = None,
    poll_s: float = POLL_S,
    grace_s: float = GRACE_S,
    workflow: psutil.Process | None = None,
) -> Outcome:
    """Run ``command`` with stdout and stderr appended to ``log_path`` until it exits or
    a limit ends it. ``has_started(log_path)`` tells whether the log shows a training step
    yet (it is asked only while the answer is no, and only when the log grew).
    ``outside_pids()`` names processes of the run that are not descendants of the command
    (Slurm's step tasks on this node). ``workflow``: the process whose end ends the run
    (the Snakemake process running this job), None to watch none."""
    watch = _Watch(limits, has_started, poll_s, grace_s, workflow)
    try:
        with _stop_signals_raise():
            return _supervise(command, log_path, env, cwd, outside_pids, watch)
    except _Stopped as stopped:  # the tree was ended; now die of the signal as asked
        signal.raise_signal(stopped.signum)
        raise SystemExit(128 + stopped.signum) from None  # a handler that did not exit


@dataclass(frozen=True)
class _Watch:
    """What ends a run besides its own exit."""

    limits: RunLimits
    has_started: Callable[[Path], bool]
    poll_s: float
    grace_s: float
    workflow: psutil.Process | None


def _supervise(
    command: Sequence[str],
    log_path: Path,
    env: Mapping[str, str] | None,
    cwd: Path | None,
    outside_pids: Callable[[], Iterable[int]] | None,
    watch: _Watch,
) -> Outcome:
    start = time.monotonic()
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            list(command),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
        # The log's own descriptor, for its size: a log deleted mid-run goes on growing
        # (the ranks write to the same file), so it is not taken for a silent one.
        log_fd = os.dup(log.fileno())
    tree = _Tree(psutil.Process(proc.pid), outside_pids)
    try:
        return _watch(proc, tree, log_path, log_fd, watch, start)
    except _Stopped:
        _ignore_stop_signals()  # a second signal must not cut the ending short
        tree.refresh()
        _end(tree.alive(), watch.grace_s)
        proc.wait()
        raise
    finally:
        os.close(log_fd)


def _watch(
    proc: subprocess.Popen,
    tree: _Tree,
    log_path: Path,
    log_fd: int,
    watch: _Watch,
    start: float,
) -> Outcome:
    limits, grace_s = watch.limits, watch.grace_s
    size, grown_at, started, ended_by, detail = -1, start, False, "", ""
    while True:
        tree.refresh()
        try:
            code = proc.wait(timeout=watch.poll_s)
            break
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        new_size = os.fstat(log_fd).st_size
        if new_size != size:
            size, grown_at = new_size, now
            started = started or watch.has_started(log_path)
        silent_s = now - grown_at
        allowance = limits.stall_s if started else limits.startup_s
        if watch.workflow is not None and not _running(watch.workflow):
            ended_by = Ended.WORKFLOW_LOST
            detail = f"the workflow process (pid {watch.workflow.pid}) is gone"
        elif now - start > limits.time_limit_s:
            ended_by = Ended.TIMEOUT
            detail = f"time limit of {limits.time_limit_s} s reached"
        elif silent_s > allowance:
            ended_by = Ended.HANG
            phase = "after the first step" if started else "before the first step"
            detail = f"no log output for {silent_s:.0f} s {phase} (allowance {allowance} s)"
        if ended_by:
            break
    stacks: tuple[str, ...] = ()
    if ended_by:
        last = last_line(log_path)  # before the ranks print their reaction to the end
        detail = f"{detail}; last log line: {last}" if last else detail
        tree.refresh()
        if ended_by == Ended.HANG:
            stacks = dump_stacks(tree.alive(), log_path.parent)
        _end(tree.alive(), grace_s)
        code = proc.wait()
    leftover = tree.alive()
    if leftover:  # the launch exited but left processes of the run behind
        _end(leftover, grace_s)
    drop_empty_stack_files(log_path.parent)
    return Outcome(
        exit_code=code,
        ended_by=ended_by,
        detail=detail,
        stack_dumps=stacks,
        leftover_processes=len(leftover),
        wall_s=time.monotonic() - start,
    )


def end_processes(procs: Iterable[psutil.Process], grace_s: float = GRACE_S) -> list[int]:
    """End ``procs`` as a run's tree is ended (SIGTERM, SIGKILL after ``grace_s``, by PID
    and start time); returns the PIDs still alive after that."""
    procs = [p for p in procs if _running(p)]
    _end(procs, grace_s)
    return [p.pid for p in procs if _running(p)]


def _end(procs: list[psutil.Process], grace_s: float) -> None:
    """SIGTERM each process, SIGKILL the ones alive after ``grace_s``, by PID."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        for proc in procs:
            with contextlib.suppress(psutil.Error):  # gone meanwhile
                proc.send_signal(sig)  # psutil checks the start time before signalling
        procs = _wait_gone(procs, wait_s)
        if not procs:
            return


def _wait_gone(procs: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """The processes still running after ``timeout_s``. Not ``psutil.wait_procs``: it
    would reap the launch process, whose exit status ``Popen.wait`` must still read."""
    deadline = time.monotonic() + timeout_s
    while True:
        procs = [p for p in procs if _running(p)]
        if not procs or time.monotonic() >= deadline:
            return procs
        time.sleep(0.1)


def dump_stacks(procs: list[psutil.Process], folder: Path) -> tuple[str, ...]:
    """Save the stacks of the Python processes among ``procs`` into ``folder``: py-spy's
    native dump where it can attach, else the rank's faulthandler (``STACK_SIGNAL``).
    Returns the names of the files written."""
    written, asked = [], []
    py_spy = shutil.which("py-spy")
    for proc in procs:
        try:
            cmdline = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        if "python" not in cmdline:
            continue
        if py_spy is not None:
            name = pid_stack_name(proc.pid)
            if _py_spy_dump(py_spy, proc.pid, cmdline, folder / name):
                written.append(name)
                continue
        if catches_stack_signal(proc.pid):
            try:
                proc.send_signal(STACK_SIGNAL)
                asked.append(proc)
            except psutil.Error:
                pass
    if asked:  # faulthandler writes from the signal handler: wait until the files fill
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and not _rank_dumps(folder, len(asked)):
            time.sleep(0.2)
        written += _rank_dumps(folder, 0)
    return tuple(sorted(written))


def _rank_dumps(folder: Path, at_least: int) -> list[str]:
    names = [p.name for p in folder.glob(RANK_STACK_GLOB) if p.stat().st_size > 0]
    return names if len(names) >= at_least else []


def _py_spy_dump(py_spy: str, pid: int, cmdline: str, out: Path) -> bool:
    try:
        result = subprocess.run(
            [py_spy, "dump", "--native", "--pid", str(pid)],
            capture_output=True,
            text=True,
            timeout=STACK_DUMP_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    if result.returncode != 0 or not result.stdout.strip():
        return False
    out.write_text(f"# py-spy dump --native --pid {pid}: {cmdline}\n{result.stdout}")
    return True


def last_line(path: Path, tail_bytes: int = 8192) -> str:
    """The log's last non-empty line, cut to ``DETAIL_CHARS`` characters."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - tail_bytes))
            tail = fh.read()
    except OSError:
        return ""
    lines = [ln.strip() for ln in tail.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= DETAIL_CHARS else line[:DETAIL_CHARS] + "..."
