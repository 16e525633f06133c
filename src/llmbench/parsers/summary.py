"""The per-log summary: window statistics and a status, apart from the line parsing.

Window statistics use ``llmbench.core.metrics.mean_std`` (population std, ddof=0), as the
recipes' parse scripts do. The window is applied to iterations as the framework numbers
them (see ``ITERATION_BASE`` and docs/log-formats.md), at the log's cadence
(``llmbench.parsers.window``).

``measure`` takes the cadence, the window and its step times; ``STATUS_RULES`` then judge
a log with step lines, the first that holds deciding (docs/log-formats.md):
1. ``malformed_number``: a value in the window, or a loss or grad norm anywhere, is not a
   number as logged: ``invalid``.
2. ``nan_loss``: a logged loss is NaN or infinite: ``invalid``.
3. ``nan_grad_norm``: a grad norm is NaN or infinite, or iterations were skipped: ``invalid``.
4. ``bad_step_time``: a window step time outside ``MIN_STEP_TIME_S``..``MAX_STEP_TIME_S``:
   ``invalid``.
5. ``launcher_failed``: the launcher said FAILED: ``failed``, even with every iteration.
6. ``complete``: the whole window and the final iteration were logged: ``success``.
7. ``failed_before_finish``: the log names a failure and the launcher did not say
   SUCCEEDED: ``failed``.
8. ``window_too_sparse``: the cadence leaves fewer than two points in the window.
9. ``window_incomplete``: points of the window are missing.
10. ``final_iteration_missing``: otherwise (8 to 10 are ``incomplete``).
A log without step lines is ``failed`` when it names a failure, else ``no_data``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

from llmbench.core.devices import max_peak_tflops
from llmbench.core.metrics import DEFAULT_WINDOW, mean_std
from llmbench.parsers.printed_config import PrintedInterval
from llmbench.parsers.vocabulary import ITERATION_BASE, Framework, Reason, Status
from llmbench.parsers.window import (
    Selection,
    Window,
    cadence_phase,
    last_at_cadence,
    log_interval,
    printed_interval_fits,
    select,
)

MAX_STEP_TIME_S = 86_400.0
"""A step time longer than a day is not a measurement of a training step."""
MIN_STEP_TIME_S = 1e-3
"""A step time below a millisecond is not a measurement of a training step either: a step
runs the model forward and backward and updates every parameter. The smallest model
llmbench runs, the embedded tiny Llama, takes about 0.1 s a step on a CPU core, and on a
GPU its eager step is bound by a few hundred kernel launches, milliseconds
(benchmarks/local_cuda.sh prints it). Such a value is a unit error (ms logged as s) or a
corrupted field."""


@dataclass
class LogSummary:
    """What one training log says about its run."""

    framework: str
    status: str  # a Status value
    reason: str = ""  # a Reason value
    detail: str = ""  # free text behind the reason: exception type, marker line, counts
    n_iterations: int = 0
    max_iteration: int = -1
    last_iteration_expected: int = -1
    iteration_base: int = 0  # number of the first step in this framework's log (0 or 1)
    log_interval: int = 1  # the logging cadence: 10 when every 10th iteration is logged
    step_time_mean_s: float = math.nan
    step_time_std_s: float = math.nan
    step_time_last_s: float = math.nan  # the older documents' method: last step's time
    tflops_per_gpu_mean: float = math.nan
    tflops_per_gpu_std: float = math.nan
    window: tuple[int, int] = DEFAULT_WINDOW  # the iterations the statistics cover
    window_iterations: int = 0  # how many logged points the window holds
    restarts: int = 0  # times the job restarted inside this log (later lines win)
    duplicates: int = 0  # step lines repeating an iteration already logged (other ranks)
    flags: str = ""  # implausible values parsed as written, e.g. `tflops_above_peak`
    checkpoint_saves: int = 0
    checkpoint_save_s: float = math.nan  # longest `Save duration` logged
    checkpoint_load_s: float = math.nan  # longest `Time spent in load_checkpoint` logged
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RunFacts:
    """Everything the reader collected, ready to be judged."""

    framework: Framework
    rows: Mapping[int, Mapping[str, float]]
    last_iteration_logged: int = -1
    failure: tuple[Reason, str] = (Reason.NONE, "")
    restarts: int = 0
    duplicates: int = 0
    checkpoint_save_s: list[float] = field(default_factory=list)
    checkpoint_load_s: list[float] = field(default_factory=list)
    earlier_failures: list[tuple[Reason, str]] = field(default_factory=list)
    job_outcome: str = ""  # the launcher's last word: SUCCEEDED, FAILED or ""
    # iteration -> column -> the field as logged, for values whose number is not the whole
    # field (their value in ``rows`` is NaN; llmbench.parsers.steps)
    malformed: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    # the log interval the framework printed in its configuration, when the log was
    # searched for it (the step lines could not tell; llmbench.parsers.printed_config)
    printed_interval: PrintedInterval | None = None


@cache
def highest_peak_tflops() -> float:
    """The highest dense peak of any device and dtype in the catalog: a logged TFLOPS
    above it is above every datasheet llmbench knows."""
    return max_peak_tflops()


def _column(
    rows: Mapping[int, Mapping[str, float]], iterations: list[int], name: str
) -> list[float]:
    return [rows[i].get(name, math.nan) for i in iterations]


def _finite_or_nan(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return max(finite) if finite else math.nan


def summarize(
    facts: RunFacts,
    window: Window | tuple[int, int],
    expected_steps: int | None = None,
    peak_tflops: float | None = None,
) -> LogSummary:
    """Window mean/std, last step, cadence, flags (``measure``), then the verdict of the
    first of ``STATUS_RULES`` that holds (docs/log-formats.md). ``peak_tflops`` is the
    device's datasheet peak when known (logged TFLOPS above it are flagged); by default the
    highest peak in the catalog."""
    if not isinstance(window, Window):
        window = Window(*window)
    summary = _facts_summary(facts, window, expected_steps)
    failure, failure_detail = facts.failure
    if not facts.rows:
        if failure is not Reason.NONE:
            _judge(summary, Verdict(Status.FAILED, failure, failure_detail))
        else:
            _judge(summary, Verdict(Status.NO_DATA, Reason.NO_STEP_LINES, ""))
        return summary
    stats = measure(facts, window, summary.last_iteration_expected)
    _fill_statistics(summary, facts, stats)
    _flag_tflops(summary, _column(facts.rows, stats.iterations, "tflops_per_gpu"), peak_tflops)
    if facts.malformed:
        summary.extra["malformed_values"] = sum(len(v) for v in facts.malformed.values())
    _judge(summary, first_verdict(facts, stats))
    if summary.status != Status.SUCCESS.value and facts.restarts:
        summary.detail += f"; {_restart_story(facts)}"
    return summary


def _facts_summary(facts: RunFacts, window: Window, expected_steps: int | None) -> LogSummary:
    """The summary of what the log says before any step is measured."""
    base = ITERATION_BASE[facts.framework]
    last_expected = facts.last_iteration_logged
    if expected_steps is not None:
        last_expected = base + expected_steps - 1
    summary = LogSummary(
        framework=facts.framework.value,
        status=Status.NO_DATA.value,
        window=(window.first, window.last) if window.last_points is None else (-1, -1),
        iteration_base=base,
        last_iteration_expected=last_expected,
        restarts=facts.restarts,
        duplicates=facts.duplicates,
        checkpoint_saves=len(facts.checkpoint_save_s),
        checkpoint_save_s=_finite_or_nan(facts.checkpoint_save_s),
        checkpoint_load_s=_finite_or_nan(facts.checkpoint_load_s),
    )
    if facts.earlier_failures:
        summary.extra["failures_before_restart"] = [
            f"{reason.value}: {detail}" for reason, detail in facts.earlier_failures
        ]
    return summary


# --- measurement ------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowStats:
    """What a log with step lines measured: its cadence, the window chosen at it, and
    whether its final iteration was logged. The status rules read this, never the
    cadence again."""

    iterations: list[int]  # every logged iteration, sorted
    interval: int
    phase: int
    chosen: Selection
    window_times_s: list[float]  # the step times of ``chosen.iterations``, as logged
    final_reached: bool
    interval_from: str = ""  # the printed configuration's interval, when it decided

    @property
    def counted(self) -> str:
        return f"{len(self.iterations)} iterations, last {self.iterations[-1]}"

    @property
    def complete(self) -> bool:
        return self.chosen.complete and not self.chosen.sparse and self.final_reached


def measure(facts: RunFacts, window: Window, last_expected: int) -> WindowStats:
    """The cadence of ``facts.rows`` (not empty): from the logged iterations, or from the
    printed configuration when they cannot tell; the window at it and its step times."""
    iterations = sorted(facts.rows)
    interval = log_interval(iterations)
    printed = facts.printed_interval
    interval_from = ""
    if printed is not None and printed_interval_fits(iterations, printed.value):
        interval, interval_from = printed.value, str(printed)
    phase = cadence_phase(iterations, interval)
    chosen = select(window, iterations, interval, phase, facts.framework is Framework.MAXTEXT)
    final_reached = last_expected < 0 or iterations[-1] >= last_at_cadence(
        last_expected, interval, phase
    )
    return WindowStats(
        iterations=iterations,
        interval=interval,
        phase=phase,
        chosen=chosen,
        window_times_s=_column(facts.rows, chosen.iterations, "step_time_s"),
        final_reached=final_reached,
        interval_from=interval_from,
    )


def _fill_statistics(summary: LogSummary, facts: RunFacts, stats: WindowStats) -> None:
    rows, chosen = facts.rows, stats.chosen
    if stats.interval_from:
        summary.extra["log_interval_from"] = stats.interval_from
    summary.log_interval = stats.interval
    summary.window = chosen.span
    summary.n_iterations = len(stats.iterations)
    summary.max_iteration = stats.iterations[-1]
    summary.window_iterations = len(chosen.iterations)
    summary.step_time_mean_s, summary.step_time_std_s = mean_std(
        v for v in stats.window_times_s if not math.isnan(v)
    )
    summary.step_time_last_s = rows[stats.iterations[-1]].get("step_time_s", math.nan)
    summary.tflops_per_gpu_mean, summary.tflops_per_gpu_std = mean_std(
        v for v in _column(rows, chosen.iterations, "tflops_per_gpu") if not math.isnan(v)
    )


# --- the status rules -------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """A status rule's judgement: status, reason, detail, and what it adds to ``extra``."""

    status: Status
    reason: Reason
    detail: str
    extra: Mapping[str, Any] = field(default_factory=dict)


StatusRule = Callable[[RunFacts, WindowStats], "Verdict | None"]


def _malformed_number(facts: RunFacts, stats: WindowStats) -> Verdict | None:
    malformed = _first_malformed(facts.malformed, stats.chosen.iterations)
    if malformed is None:
        return None
    iteration, text = malformed
    detail = f"iteration {iteration}: '{text}' is not a number: the field goes on after it"
    return Verdict(Status.INVALID, Reason.MALFORMED_NUMBER, detail)


def _nan_loss(facts: RunFacts, stats: WindowStats) -> Verdict | None:
    if not _has_nonfinite(facts.rows, stats.iterations, "loss"):
        return None
    return Verdict(Status.INVALID, Reason.NAN_LOSS, stats.counted)


def _nan_grad_norm(facts: RunFacts, stats: WindowStats) -> Verdict | None:
    skipped = _column(facts.rows, stats.iterations, "nan_iterations")
    nonfinite = _has_nonfinite(facts.rows, stats.iterations, "grad_norm")
    if not nonfinite and not any(v > 0 for v in skipped):
        return None
    return Verdict(Status.INVALID, Reason.NAN_GRAD_NORM, stats.counted)


def _bad_step_time(facts: RunFacts, stats: WindowStats) -> Verdict | None:
    pairs = zip(stats.chosen.iterations, stats.window_times_s, strict=True)
    bad = next(((i, t) for i, t in pairs if not MIN_STEP_TIME_S <= t <= MAX_STEP_TIME_S), None)
    if bad is None:
        return None
    detail = f"iteration {bad[0]}: step time {bad[1]!r} s in the window"
    if 0 < bad[1] < MIN_STEP_TIME_S:
        detail += f", below the floor of {MIN_STEP_TIME_S} s"
    return Verdict(Status.INVALID, Reason.BAD_STEP_TIME, detail)


def _launcher_failed(facts: RunFacts, stats: WindowStats) -> Verdict | None:
    """The launcher's last word decides, even when every iteration was logged."""
    if facts.job_outcome != "FAILED":
        return None
    failure, detail = facts.failure
    reason = failure if failure is not Reason.NONE else Reason.JOB_FAILED
    return Verdict(Status.FAILED, reason, detail, {"progress": stats.counted})


def _complete(facts: RunFacts, stats: WindowStats) -> Verdict | None:
    if not stats.complete:
        return None
    restarted = Reason.RESTARTED if facts.restarts else Reason.NONE
    failure = facts.failure[0]
    extra = {"failure_after_finish": failure.value} if failure is not Reason.NONE else {}
    return Verdict(Status.SUCCESS, restarted, _restart_story(facts), extra)


def _failed_before_finish(facts: RunFacts, stats: WindowStats) -> Verdict | None:
    failure, detail = facts.failure
    if failure is Reason.NONE or facts.job_outcome == "SUCCEEDED":
        return None
    return Verdict(Status.FAILED, failure, detail, {"progress": stats.counted})


def _window_too_sparse(facts: RunFacts, stats: WindowStats) -> Verdict | None:
    if not stats.chosen.sparse:
        return None
    return Verdict(Status.INCOMPLETE, Reason.WINDOW_TOO_SPARSE, _sparse_story(stats.chosen))


def _window_incomplete(facts: RunFacts, stats: WindowStats) -> Verdict | None:
    chosen = stats.chosen
    if chosen.complete:
        return None
    detail = f"{stats.counted}; {chosen.present} of {chosen.expected} window points logged"
    return Verdict(Status.INCOMPLETE, Reason.WINDOW_INCOMPLETE, detail)


def _final_iteration_missing(facts: RunFacts, stats: WindowStats) -> Verdict:
    return Verdict(Status.INCOMPLETE, Reason.FINAL_ITERATION_MISSING, stats.counted)


STATUS_RULES: tuple[tuple[str, StatusRule], ...] = (
    ("malformed_number", _malformed_number),
    ("nan_loss", _nan_loss),
    ("nan_grad_norm", _nan_grad_norm),
    ("bad_step_time", _bad_step_time),
    ("launcher_failed", _launcher_failed),
    ("complete", _complete),
    ("failed_before_finish", _failed_before_finish),
    ("window_too_sparse", _window_too_sparse),
    ("window_incomplete", _window_incomplete),
    ("final_iteration_missing", _final_iteration_missing),
)
"""A log with step lines gets the verdict of the first rule that holds, in this order (the
module docstring says each); the last always holds."""


def first_verdict(facts: RunFacts, stats: WindowStats) -> Verdict:
    for _name, rule in STATUS_RULES:
        verdict = rule(facts, stats)
        if verdict is not None:
            return verdict
    raise AssertionError("the last status rule always holds")


def _flag_tflops(summary: LogSummary, tflops: list[float], peak: float | None) -> None:
    """Logged TFLOPS above the datasheet peak are kept as written and flagged."""
    finite = [v for v in tflops if math.isfinite(v)]
    if not finite:
        return
    ceiling = highest_peak_tflops() if peak is None else float(peak)
    above = [v for v in finite if v > ceiling]
    if above:
        summary.flags = "tflops_above_peak"
        summary.extra["tflops_above_peak"] = {
            "steps": len(above),
            "max_logged": max(above),
            "peak_tflops": ceiling,
        }


def _restart_story(facts: RunFacts) -> str:
    if not facts.restarts:
        return ""
    story = f"{facts.restarts} restart{'s' if facts.restarts > 1 else ''}"
    if facts.earlier_failures:
        story += " after " + ", ".join(reason.value for reason, _ in facts.earlier_failures)
    return story


def _sparse_story(chosen: Selection) -> str:
    first, last = chosen.span
    return (
        f"the log interval leaves {chosen.expected} logged point(s) in {first}-{last}; "
        "pick a wider window or last:N"
    )


CHECKED_EVERYWHERE = ("loss", "grad_norm")
"""Values whose every logged instance is checked (a NaN loss anywhere is ``nan_loss``); the
window's values are checked whatever their column."""


def _first_malformed(
    malformed: Mapping[int, Mapping[str, str]], window: list[int]
) -> tuple[int, str] | None:
    """(iteration, field as logged) of the first malformed value the verdict rests on: any
    column in the window, a loss or grad norm anywhere."""
    if not malformed:
        return None
    in_window = set(window)
    for iteration in sorted(malformed):
        for column, text in malformed[iteration].items():
            if iteration in in_window or column in CHECKED_EVERYWHERE:
                return iteration, text
    return None


def _has_nonfinite(
    rows: Mapping[int, Mapping[str, float]], iterations: list[int], name: str
) -> bool:
    """True when a logged value is NaN or infinite (a value never logged does not count)."""
    return any(name in rows[i] and not math.isfinite(rows[i][name]) for i in iterations)


def no_data_summary(reason: Reason, detail: str) -> LogSummary:
    """The summary of a log that could not be read (``unreadable``, ``log_missing``)."""
    return LogSummary(Framework.UNKNOWN.value, Status.NO_DATA.value, reason.value, detail)


def _judge(summary: LogSummary, verdict: Verdict) -> None:
    summary.status, summary.reason = verdict.status.value, verdict.reason.value
    summary.detail = verdict.detail
    summary.extra.update(verdict.extra)
