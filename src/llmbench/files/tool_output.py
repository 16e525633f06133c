"""An outside tool's output, read as bytes that may be hostile.

A sick node is exactly where ``nvidia-smi``, ``dcgmi`` or ``sinfo`` print garbage, print
without end, or never exit. ``run_tool`` runs one such tool in a process group of its
own, reads its output as bytes up to a bound (the tool is stopped beyond it), stops it
and every process it started when its time limit passes, and returns what it printed
(decoded, undecodable bytes replaced) with one phrase naming what went wrong, if
anything: not installed, timed out, printed too much, an exit status and its first line.
It never raises for what the tool does.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_OUTPUT_BYTES = 4 << 20
"""Output read from one tool run: a node's health query or diagnostic report is
kilobytes; 4 MiB holds any of them and keeps a runaway tool from filling memory."""
_READ_CHUNK = 65536
_KILL_WAIT_S = 5.0
COMMAND_CHARS = 60
"""Of a command, what a problem quotes (a node's Cluster page lists every problem)."""
FIRST_LINE_CHARS = 160
"""Of a failed tool's first output line, what a problem quotes."""


@dataclass(frozen=True)
class ToolRun:
    """One run of a tool: its output (``text``; stderr follows stdout in it unless it was
    kept apart) and how it ended."""

    argv: tuple[str, ...]
    text: str
    exit_code: int | None  # None: did not start, or stopped by llmbench
    timed_out: bool = False
    overflowed: bool = False  # printed more than max_bytes (stopped there)
    missing: bool = False  # could not be started
    start_error: str = ""
    timeout_s: float = 0.0
    max_bytes: int = MAX_OUTPUT_BYTES

    @property
    def command(self) -> str:
        """The command as a problem names it (a long one cut after its first option)."""
        text = " ".join(self.argv)
        if len(text) <= COMMAND_CHARS:
            return text
        return " ".join(self.argv[:2])[:COMMAND_CHARS] + "..."

    @property
    def ending(self) -> str:
        """How it ended, one word: ok, exit (a status other than 0), timeout, overflow,
        missing (not started)."""
        if self.missing:
            return "missing"
        if self.timed_out:
            return "timeout"
        if self.overflowed:
            return "overflow"
        return "exit" if self.exit_code else "ok"

    @property
    def problem(self) -> str | None:
        """One phrase naming the command and what went wrong; None when it exited 0."""
        if self.missing:
            return f"{self.argv[0]}: {self.start_error or 'not installed'}"
        if self.timed_out:
            return f"{self.command}: timed out after {self.timeout_s:g} s (stopped)"
        if self.overflowed:
            return (
                f"{self.command}: printed more than {self.max_bytes:,} bytes (stopped; a "
                "healthy node prints far less)"
            )
        if self.exit_code:
            how = (
                f"killed by signal {-self.exit_code}"
                if self.exit_code < 0
                else f"exit code {self.exit_code}"
            )
            line = first_line(self.text)
            return f"{self.command}: {how}" + (f": {line}" if line else "")
        return None


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, printable and cut to ``FIRST_LINE_CHARS``."""
    for line in text.splitlines():
        shown = "".join(c if c.isprintable() else "?" for c in line.strip())
        if shown:
            cut = len(shown) > FIRST_LINE_CHARS
            return shown[:FIRST_LINE_CHARS] + ("..." if cut else "")
    return ""


def run_tool(
    argv: Sequence[str],
    timeout_s: float,
    max_bytes: int = MAX_OUTPUT_BYTES,
    stderr: bool = True,
    env: Mapping[str, str] | None = None,
) -> ToolRun:
    """Run ``argv`` (see the module docstring). ``stderr``: its stderr joins the output
    (False: it is read and dropped, within the same bound)."""
    argv = tuple(argv)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if stderr else subprocess.PIPE,
            start_new_session=True,  # its own group: stopped with everything it started
            env=None if env is None else dict(env),
        )
    except OSError as err:
        reason = "not installed" if isinstance(err, FileNotFoundError) else err.strerror
        return ToolRun(argv, "", None, missing=True, start_error=reason or str(err))
    deadline = time.monotonic() + timeout_s
    kept, timed_out, overflowed = _read(proc, deadline, max_bytes, keep_stderr=stderr)
    if not (timed_out or overflowed):
        try:  # its output closed; it may still be running
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    _stop_group(proc)  # on success too: what it started and left behind goes with it
    text = bytes(kept[:max_bytes]).decode("utf-8", errors="replace")
    code = None if timed_out or overflowed else proc.returncode
    return ToolRun(
        argv, text, code, timed_out, overflowed, timeout_s=timeout_s, max_bytes=max_bytes
    )


def _read(
    proc: subprocess.Popen[bytes], deadline: float, max_bytes: int, keep_stderr: bool
) -> tuple[bytearray, bool, bool]:
    """(bytes kept, timed out, overflowed): read stdout (and a separate stderr) until
    both close, the deadline (``time.monotonic()``) passes or more than ``max_bytes``
    arrived."""
    kept = bytearray()
    dropped = 0
    with selectors.DefaultSelector() as selector:
        for stream, keep in ((proc.stdout, True), (proc.stderr, False)):
            if stream is not None:
                os.set_blocking(stream.fileno(), False)
                selector.register(stream, selectors.EVENT_READ, keep)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return kept, True, False
            for key, _ in selector.select(timeout=left):
                chunk = os.read(key.fd, _READ_CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()  # type: ignore[union-attr]
                elif key.data or keep_stderr:
                    kept += chunk
                else:
                    dropped += len(chunk)
                if len(kept) > max_bytes or dropped > max_bytes:
                    return kept, False, True
    return kept, False, False


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """End the tool's process group: SIGTERM, then SIGKILL to whatever is left (a tool
    that ignores SIGTERM, or processes it started)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.returncode is not None and sig == signal.SIGTERM:
            continue  # it ended by itself: only its leftovers remain
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=_KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            continue
    for stream in (proc.stdout, proc.stderr):
        if stream is not None and not stream.closed:
            stream.close()
