"""``parse_log``: one pass over a training log into per-iteration rows and a summary.

The scanner hands over only lines holding a needle; this module turns them into rows,
tracks restarts and duplicates, and collects checkpoint timings, failure markers and the
job's outcome, all in that one pass.
The rows become a table (pandas) in ``llmbench.parsers.table``, not here: summarising a
log (``llmbench parse``, the runner's watchdog, a train job before its ranks start) loads
neither numpy nor pandas.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from llmbench.core.metrics import DEFAULT_WINDOW
from llmbench.errors import ConfigError, ParseError
from llmbench.parsers import steps as step_lines
from llmbench.parsers.failures import FAILURE_NEEDLES, FailureTracker
from llmbench.parsers.nccl import CollectiveSummary, summarize_nccl_trace
from llmbench.parsers.printed_config import printed_interval
from llmbench.parsers.scan import (
    CONTEXT_BYTES,
    WINDOW_BYTES,
    Hit,
    LineScanner,
    Needle,
    NotRegularFileError,
    plain_line,
)
from llmbench.parsers.summary import LogSummary, RunFacts, summarize
from llmbench.parsers.vocabulary import Framework, Reason
from llmbench.parsers.window import Window, as_window, cadence_is_clear

DEFAULT_TAIL_BYTES = 32 << 20
"""Failure markers are looked for in the last 32 MiB only: a failure ends the job, so its
evidence is at the end, and the cost of the search stays independent of the log size."""
BRIDGE_STEP_TIME_TOLERANCE_S = 0.0051
"""How far a `Step Time` line (two decimals) and its iteration line's elapsed time (0.1 ms)
may differ: both print one elapsed time, each rounded."""

_STEP_NEEDLES: dict[Framework, tuple[Needle, ...]] = {
    Framework.NEMO2: (Needle(b"train_step_timing in s", "nemo"),),
    Framework.MEGATRON: (
        Needle(b"elapsed time per iteration", "megatron"),
        Needle(b"Step Time", "bridge_step_time"),
    ),
    Framework.MAXTEXT: (Needle(b"completed step:", "maxtext"),),
}
_CHECKPOINT_NEEDLE = Needle(b"Global Checkpoint", "checkpoint")
_FAILURE_NEEDLES = tuple(Needle(text, "failure", tail_only=True) for text in FAILURE_NEEDLES)
# torchrun's and NeMo's ft_launcher's `Worker group FAILED. 3/3 attempts left; will restart
# worker group` and NeMo-Run's `Job <id> finished: X`. Searched in the tail, like failure
# markers: a third literal over the whole file would cost a third of the throughput, and a
# restart earlier in the log still shows as the iteration counter going back.
_OUTCOME_NEEDLES = (
    Needle(b"will restart worker group", "restart", tail_only=True),
    Needle(b" finished: ", "outcome", tail_only=True),
)
_KIND_FRAMEWORK = {
    "nemo": Framework.NEMO2,
    "megatron": Framework.MEGATRON,
    "maxtext": Framework.MAXTEXT,
}
_CKPT_SAVE = re.compile(rb"Global Checkpoint Save\b.*?Save duration\s*:\s*([0-9.eE+-]{1,32})")
_CKPT_LOAD = re.compile(rb"Global Checkpoint Load\b.*?load_checkpoint\s*:\s*([0-9.eE+-]{1,32})")
# Rank labels that tell one output stream from another: srun -l (`3: `), torchrun and
# NeMo-Run (`[default3]:`, `name/3 [default0]:`).
_SRUN_LABEL = re.compile(rb"\s*(\d{1,7}): ")
_TORCHRUN_LABEL = re.compile(rb"\[default(\d{1,7})\]")
_NEMORUN_LABEL = re.compile(rb"\s*([\w.\-]{1,200}/\d{1,7})\s")


def needles_for(framework: Framework | None) -> list[Needle]:
    """The needles worth searching once the framework is known (all of them before)."""
    chosen = [framework] if framework in _STEP_NEEDLES else list(_STEP_NEEDLES)
    needles = [n for fw in chosen for n in _STEP_NEEDLES[fw]]  # type: ignore[index]
    if framework is not Framework.MAXTEXT:
        needles.append(_CHECKPOINT_NEEDLE)
    return needles + list(_OUTCOME_NEEDLES) + list(_FAILURE_NEEDLES)


def _rank_key(line: bytes) -> bytes:
    head = line[:256]
    parts = [
        m.group(1) if m else b""
        for m in (_SRUN_LABEL.match(head), _TORCHRUN_LABEL.search(head), _NEMORUN_LABEL.match(head))
    ]
    return b"|".join(parts)


def _float(raw: bytes) -> float:
    try:
        return float(raw)
    except ValueError:
        return math.nan


class LogReader:
    """Accumulates the facts of one log from its hits, in file order."""

    def __init__(self, framework: Framework | None = None) -> None:
        self.framework = framework
        self.rows: dict[int, dict[str, float]] = {}
        self.malformed: dict[int, dict[str, str]] = {}  # iteration -> column -> field
        self.last_iteration_logged = -1
        self.failures = FailureTracker()
        self.checkpoint_save_s: list[float] = []
        self.checkpoint_load_s: list[float] = []
        self.duplicates = 0
        self._restarts: Counter[bytes] = Counter()
        self._previous: dict[bytes, int] = {}
        self._segment: dict[bytes, set[int]] = {}
        self._owner: dict[int, bytes] = {}
        self._timing_list: list[float] | None = None
        self._bridge_rows: dict[int, dict[str, float]] = {}
        self._last_megatron: int | None = None
        self._bridge_filled = True
        self._bridge_pending: dict[str, float] | None = None
        self._last_offset: dict[str, int] = {}
        self.launcher_restarts = 0

    def feed(self, hit: Hit) -> None:
        if self._last_offset.get(hit.kind) == hit.offset:
            return  # the same line, found again from the next window
        self._last_offset[hit.kind] = hit.offset
        line = plain_line(hit.line)
        if hit.kind == "failure":
            self.failures.feed(line)
        elif hit.kind == "outcome":
            self.failures.outcome(line)
        elif hit.kind == "restart":
            self.launcher_restarts += 1
            self.failures.restart()
        elif hit.kind == "checkpoint":
            self._checkpoint(line)
        elif hit.kind == "bridge_step_time":
            self._bridge_step_time(line)
        else:
            self._step(hit.kind, line)

    def _step(self, kind: str, line: bytes) -> None:
        framework = _KIND_FRAMEWORK[kind]
        if self.framework not in (None, framework):
            return  # another framework's line inside this framework's log: noise
        record = step_lines.STEP_PARSERS[framework](line)
        if record is None:
            if framework is Framework.NEMO2:
                self._timing_list = step_lines.parse_nemo_timing_list(line) or self._timing_list
            return
        self.framework = framework
        self.last_iteration_logged = max(self.last_iteration_logged, record.last_iteration)
        self._add_row(_rank_key(line), record.iteration, record.values)
        if framework is Framework.MEGATRON:
            self._last_megatron, self._bridge_filled = record.iteration, False
            pending, self._bridge_pending = self._bridge_pending, None
            if pending is not None:
                self._bridge_fill(pending)
        if record.malformed:
            self.malformed[record.iteration] = record.malformed
        else:
            self.malformed.pop(record.iteration, None)  # the later line wins, as for rows

    def _add_row(self, stream: bytes, iteration: int, values: dict[str, float]) -> None:
        segment = self._segment.setdefault(stream, set())
        previous = self._previous.get(stream)
        if previous is not None and iteration < previous:
            self._restarts[stream] += 1
            segment.clear()
            self.failures.restart()
        if iteration in segment or self._owner.get(iteration, stream) != stream:
            self.duplicates += 1
        segment.add(iteration)
        self._previous[stream] = iteration
        self._owner[iteration] = stream
        self.rows[iteration] = values  # later lines win: a restart re-runs the iteration

    def _bridge_step_time(self, line: bytes) -> None:
        """Megatron-Bridge prints ``Step Time`` on rank 0 just before the last rank prints
        the iteration line of the same step (both from one elapsed time); with pipeline
        stages on other ranks the two may come in either order. The line goes to the
        iteration line next to it whose step time it repeats."""
        if self.framework not in (None, Framework.MEGATRON):
            return
        values = step_lines.parse_bridge_step_time(line)
        if values is None:
            return
        if self._last_megatron is None:
            # a log with `Step Time` lines only: number them 1, 2, ... like Megatron does
            self._bridge_rows[len(self._bridge_rows) + 1] = values
        if not self._bridge_fill(values):
            self._bridge_pending = values  # for the iteration line that follows

    def _bridge_fill(self, values: dict[str, float]) -> bool:
        """Fill (never overwrite) the last iteration line's values from a ``Step Time``
        line when that iteration is not filled yet and its step time is the one printed
        (to the line's two decimals)."""
        if self._last_megatron is None or self._bridge_filled:
            return False
        row = self.rows.get(self._last_megatron, {})
        logged = row.get("step_time_s", math.nan)
        if not abs(logged - values["step_time_s"]) <= BRIDGE_STEP_TIME_TOLERANCE_S:
            return False
        for name, value in values.items():
            row.setdefault(name, value)
        self._bridge_filled = True
        return True

    def _checkpoint(self, line: bytes) -> None:
        if m := _CKPT_SAVE.search(line):
            self.checkpoint_save_s.append(_float(m.group(1)))
        elif m := _CKPT_LOAD.search(line):
            self.checkpoint_load_s.append(_float(m.group(1)))

    def facts(self) -> RunFacts:
        framework, rows = self.framework, self.rows
        if not rows and self._bridge_rows and framework in (None, Framework.MEGATRON):
            framework, rows = Framework.MEGATRON, self._bridge_rows
        if not rows and self._timing_list and framework in (None, Framework.NEMO2):
            framework = Framework.NEMO2
            rows = {i: {"step_time_s": t} for i, t in enumerate(self._timing_list)}
        return RunFacts(
            framework=framework or Framework.UNKNOWN,
            rows=rows,
            last_iteration_logged=self.last_iteration_logged,
            failure=self.failures.root_cause(),
            # one restart may show twice: the launcher's line, then the counter going back
            restarts=max(self.launcher_restarts, max(self._restarts.values(), default=0)),
            duplicates=self.duplicates,
            checkpoint_save_s=self.checkpoint_save_s,
            checkpoint_load_s=self.checkpoint_load_s,
            earlier_failures=list(self.failures.earlier),
            job_outcome=self.failures.job_outcome,
            malformed=self.malformed if rows is self.rows else {},
        )


@dataclass
class ParsedLog:
    """A parsed log: ``summary`` plus the values of each unique iteration (``rows``:
    iteration -> column -> value; ``llmbench.parsers.table.steps_table`` makes them the
    steps table)."""

    summary: LogSummary
    rows: Mapping[int, Mapping[str, float]] = field(default_factory=dict, repr=False)
    nccl: list[CollectiveSummary] = field(default_factory=list, repr=False)


def _utf16(path: str | os.PathLike[str]) -> bool:
    """The log starts as UTF-16 text: a byte order mark, or ASCII with a NUL beside every
    character (step lines are then invisible to a byte search)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1024)
    except OSError:
        return False
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    even, odd = head[0::2], head[1::2]
    if len(odd) < 32:
        return False
    return any(
        a.count(0) > 0.9 * len(a) and b.count(0) < 0.1 * len(b)
        for a, b in ((even, odd), (odd, even))
    )


def read_facts(
    source: str | os.PathLike[str] | bytes,
    framework: Framework | None = None,
    tail_bytes: int = DEFAULT_TAIL_BYTES,
    window_bytes: int = WINDOW_BYTES,
    context_bytes: int = CONTEXT_BYTES,
) -> RunFacts:
    """Scan a log (a path, or the log's bytes) and collect its facts."""
    reader = LogReader(framework)
    scanner = LineScanner(needles_for(framework), tail_bytes, window_bytes, context_bytes)
    windows = scanner.scan_bytes(source) if isinstance(source, bytes) else scanner.scan_file(source)
    known = framework
    for hits in windows:
        for hit in hits:
            reader.feed(hit)
        if reader.framework is not known:
            known = reader.framework
            scanner.needles = needles_for(known)  # stop searching other frameworks' lines
    facts = reader.facts()
    # one or two iteration lines may not tell the cadence: the printed configuration may
    # (a second, short pass over the log's head; step lines numbered by us do not count)
    if facts.rows and facts.rows is reader.rows and not cadence_is_clear(sorted(facts.rows)):
        facts.printed_interval = printed_interval(source, facts.framework)
    return facts


def parse_log(
    path: str | os.PathLike[str],
    window: Window | str | tuple[int, int] = DEFAULT_WINDOW,
    expected_steps: int | None = None,
    *,
    framework: Framework | str | None = None,
    nccl: bool = False,
    tail_bytes: int = DEFAULT_TAIL_BYTES,
    peak_tflops: float | None = None,
) -> ParsedLog:
    """Parse one training log. Never raises on content; raises ``ParseError`` when the
    path is not a readable regular file and ``ConfigError`` for a bad window or framework.

    ``window``: ``(first, last)``, ``"35-44"`` or ``"last:10"`` (``llmbench.parsers.window``);
    ``framework`` skips auto-detection (the first step line found decides otherwise);
    ``nccl`` adds a per-collective summary of NCCL trace lines (a second, slower pass);
    ``peak_tflops``: the device's datasheet peak, above which logged TFLOPS are flagged.
    """
    window = as_window(window)
    try:
        chosen = Framework(framework) if framework is not None else None
    except ValueError:
        allowed = ", ".join(f.value for f in Framework if f is not Framework.UNKNOWN)
        raise ConfigError(f"framework {framework!r}: allowed are {allowed}") from None
    try:
        facts = read_facts(path, chosen, tail_bytes)
        collectives = summarize_nccl_trace(path) if nccl else []
    except NotRegularFileError as err:
        raise ParseError(f"{os.fspath(path)}: not a regular file ({err.kind})") from err
    except OSError as err:
        raise ParseError(f"{os.fspath(path)}: cannot read: {err.strerror or err}") from err
    summary = summarize(facts, window, expected_steps, peak_tflops)
    if summary.reason == Reason.NO_STEP_LINES.value and _utf16(path):
        summary.reason = Reason.UNREADABLE.value
        summary.detail = "the log is UTF-16 text; llmbench reads ASCII or UTF-8 logs " + (
            "(iconv -f UTF-16 -t UTF-8 converts it)"
        )
    if nccl:
        summary.extra["nccl"] = [c.as_dict() for c in collectives]
    return ParsedLog(summary, facts.rows, collectives)
