"""The per-log summary: window statistics and a status, apart from the line parsing.

Window statistics use ``llmbench.metrics.mean_std`` (population std, ddof=0), as the
recipes' parse scripts do. The window is applied to iterations as the framework numbers
them (see ``ITERATION_BASE`` and docs/log-formats.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from llmbench.metrics import DEFAULT_WINDOW, mean_std
from llmbench.parsers.vocabulary import ITERATION_BASE, Framework, Reason, Status


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
    step_time_mean_s: float = math.nan
    step_time_std_s: float = math.nan
    step_time_last_s: float = math.nan  # the older documents' method: last step's time
    tflops_per_gpu_mean: float = math.nan
    tflops_per_gpu_std: float = math.nan
    window: tuple[int, int] = DEFAULT_WINDOW
    window_iterations: int = 0  # how many of the window's iterations were logged
    restarts: int = 0  # times the iteration counter went back (later lines win)
    duplicates: int = 0  # step lines repeating an iteration already logged (other ranks)
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


def _column(
    rows: Mapping[int, Mapping[str, float]], iterations: list[int], name: str
) -> list[float]:
    return [rows[i].get(name, math.nan) for i in iterations]


def _finite_or_nan(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return max(finite) if finite else math.nan


def summarize(
    facts: RunFacts, window: tuple[int, int], expected_steps: int | None = None
) -> LogSummary:
    """Window mean/std, last step, and the status rules of docs/log-formats.md."""
    base = ITERATION_BASE[facts.framework]
    last_expected = facts.last_iteration_logged
    if expected_steps is not None:
        last_expected = base + expected_steps - 1
    summary = LogSummary(
        framework=facts.framework.value,
        status=Status.NO_DATA.value,
        window=window,
        iteration_base=base,
        last_iteration_expected=last_expected,
        restarts=facts.restarts,
        duplicates=facts.duplicates,
        checkpoint_saves=len(facts.checkpoint_save_s),
        checkpoint_save_s=_finite_or_nan(facts.checkpoint_save_s),
        checkpoint_load_s=_finite_or_nan(facts.checkpoint_load_s),
    )
    failure, failure_detail = facts.failure
    rows = facts.rows
    if not rows:
        if failure is not Reason.NONE:
            _judge(summary, Status.FAILED, failure, failure_detail)
        else:
            _judge(summary, Status.NO_DATA, Reason.NO_STEP_LINES, "")
        return summary

    iterations = sorted(rows)
    lo, hi = window
    in_window = [i for i in iterations if lo <= i <= hi]
    summary.n_iterations = len(iterations)
    summary.max_iteration = iterations[-1]
    summary.window_iterations = len(in_window)
    summary.step_time_mean_s, summary.step_time_std_s = mean_std(
        v for v in _column(rows, in_window, "step_time_s") if not math.isnan(v)
    )
    summary.step_time_last_s = rows[iterations[-1]].get("step_time_s", math.nan)
    summary.tflops_per_gpu_mean, summary.tflops_per_gpu_std = mean_std(
        v for v in _column(rows, in_window, "tflops_per_gpu") if not math.isnan(v)
    )

    counted = f"{len(iterations)} iterations, last {iterations[-1]}"
    nan_iterations = _column(rows, iterations, "nan_iterations")
    window_complete = len(in_window) == hi - lo + 1
    if _has_nonfinite(rows, iterations, "loss"):
        _judge(summary, Status.INVALID, Reason.NAN_LOSS, counted)
    elif _has_nonfinite(rows, iterations, "grad_norm") or any(v > 0 for v in nan_iterations):
        _judge(summary, Status.INVALID, Reason.NAN_GRAD_NORM, counted)
    elif window_complete and (last_expected < 0 or summary.max_iteration >= last_expected):
        _judge(summary, Status.SUCCESS, Reason.NONE, "")
        if failure is not Reason.NONE:
            summary.extra["failure_after_finish"] = failure.value
    elif failure is not Reason.NONE:
        _judge(summary, Status.FAILED, failure, failure_detail)
        summary.extra["progress"] = counted
    elif not window_complete:
        _judge(summary, Status.INCOMPLETE, Reason.WINDOW_INCOMPLETE, counted)
    else:
        _judge(summary, Status.INCOMPLETE, Reason.FINAL_ITERATION_MISSING, counted)
    return summary


def _has_nonfinite(
    rows: Mapping[int, Mapping[str, float]], iterations: list[int], name: str
) -> bool:
    """True when a logged value is NaN or infinite (a value never logged does not count)."""
    return any(name in rows[i] and not math.isfinite(rows[i][name]) for i in iterations)


def _judge(summary: LogSummary, status: Status, reason: Reason, detail: str) -> None:
    summary.status, summary.reason, summary.detail = status.value, reason.value, detail
