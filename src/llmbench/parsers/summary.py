"""The per-log summary: window statistics and a status, apart from the line parsing.

Window statistics use ``llmbench.core.metrics.mean_std`` (population std, ddof=0), as the
recipes' parse scripts do. The window is applied to iterations as the framework numbers
them (see ``ITERATION_BASE`` and docs/log-formats.md), at the log's cadence
(``llmbench.parsers.window``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
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
    """Window mean/std, last step, cadence, flags, and the status rules of
    docs/log-formats.md. ``peak_tflops`` is the device's datasheet peak when known (logged
    TFLOPS above it are flagged); by default the highest peak in the catalog."""
    if not isinstance(window, Window):
        window = Window(*window)
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
    failure, failure_detail = facts.failure
    rows = facts.rows
    if not rows:
        if failure is not Reason.NONE:
            _judge(summary, Status.FAILED, failure, failure_detail)
        else:
            _judge(summary, Status.NO_DATA, Reason.NO_STEP_LINES, "")
        return summary

    iterations = sorted(rows)
    interval, phase = _cadence(facts, iterations, summary)
    chosen = select(window, iterations, interval, phase, facts.framework is Framework.MAXTEXT)
    summary.log_interval = interval
    summary.window = chosen.span
    summary.n_iterations = len(iterations)
    summary.max_iteration = iterations[-1]
    summary.window_iterations = len(chosen.iterations)
    window_times = _column(rows, chosen.iterations, "step_time_s")
    summary.step_time_mean_s, summary.step_time_std_s = mean_std(
        v for v in window_times if not math.isnan(v)
    )
    summary.step_time_last_s = rows[iterations[-1]].get("step_time_s", math.nan)
    summary.tflops_per_gpu_mean, summary.tflops_per_gpu_std = mean_std(
        v for v in _column(rows, chosen.iterations, "tflops_per_gpu") if not math.isnan(v)
    )
    _flag_tflops(summary, _column(rows, iterations, "tflops_per_gpu"), peak_tflops)

    counted = f"{len(iterations)} iterations, last {iterations[-1]}"
    nan_iterations = _column(rows, iterations, "nan_iterations")
    bad_time = next(
        (
            (i, t)
            for i, t in zip(chosen.iterations, window_times, strict=True)
            if not MIN_STEP_TIME_S <= t <= MAX_STEP_TIME_S
        ),
        None,
    )
    malformed = _first_malformed(facts.malformed, chosen.iterations)
    final_reached = last_expected < 0 or summary.max_iteration >= last_at_cadence(
        last_expected, interval, phase
    )
    complete = chosen.complete and not chosen.sparse and final_reached
    if facts.malformed:
        summary.extra["malformed_values"] = sum(len(v) for v in facts.malformed.values())
    if malformed is not None:
        iteration, text = malformed
        detail = f"iteration {iteration}: '{text}' is not a number: the field goes on after it"
        _judge(summary, Status.INVALID, Reason.MALFORMED_NUMBER, detail)
    elif _has_nonfinite(rows, iterations, "loss"):
        _judge(summary, Status.INVALID, Reason.NAN_LOSS, counted)
    elif _has_nonfinite(rows, iterations, "grad_norm") or any(v > 0 for v in nan_iterations):
        _judge(summary, Status.INVALID, Reason.NAN_GRAD_NORM, counted)
    elif bad_time is not None:
        detail = f"iteration {bad_time[0]}: step time {bad_time[1]!r} s in the window"
        if 0 < bad_time[1] < MIN_STEP_TIME_S:
            detail += f", below the floor of {MIN_STEP_TIME_S} s"
        _judge(summary, Status.INVALID, Reason.BAD_STEP_TIME, detail)
    elif facts.job_outcome == "FAILED":
        # the launcher's last word decides, even when every iteration was logged
        reason = failure if failure is not Reason.NONE else Reason.JOB_FAILED
        _judge(summary, Status.FAILED, reason, failure_detail)
        summary.extra["progress"] = counted
    elif complete:
        restarted = Reason.RESTARTED if facts.restarts else Reason.NONE
        _judge(summary, Status.SUCCESS, restarted, _restart_story(facts))
        if failure is not Reason.NONE:
            summary.extra["failure_after_finish"] = failure.value
    elif failure is not Reason.NONE and facts.job_outcome != "SUCCEEDED":
        _judge(summary, Status.FAILED, failure, failure_detail)
        summary.extra["progress"] = counted
    elif chosen.sparse:
        _judge(summary, Status.INCOMPLETE, Reason.WINDOW_TOO_SPARSE, _sparse_story(chosen))
    elif not chosen.complete:
        detail = f"{counted}; {chosen.present} of {chosen.expected} window points logged"
        _judge(summary, Status.INCOMPLETE, Reason.WINDOW_INCOMPLETE, detail)
    else:
        _judge(summary, Status.INCOMPLETE, Reason.FINAL_ITERATION_MISSING, counted)
    if summary.status != Status.SUCCESS.value and facts.restarts:
        summary.detail += f"; {_restart_story(facts)}"
    return summary


def _cadence(facts: RunFacts, iterations: list[int], summary: LogSummary) -> tuple[int, int]:
    """The log interval and its phase: from the logged iterations, or from the printed
    configuration when they cannot tell (``summary.extra`` then quotes it)."""
    interval = log_interval(iterations)
    printed = facts.printed_interval
    if printed is not None and printed_interval_fits(iterations, printed.value):
        interval = printed.value
        summary.extra["log_interval_from"] = str(printed)
    return interval, cadence_phase(iterations, interval)


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


def _judge(summary: LogSummary, status: Status, reason: Reason, detail: str) -> None:
    summary.status, summary.reason, summary.detail = status.value, reason.value, detail
