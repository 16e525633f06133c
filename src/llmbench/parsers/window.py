"""Which logged iterations a log's statistics average over, and whether they are all there.

A window is an iteration range ``FIRST-LAST`` (inclusive, in the framework's numbering) or
``last:N``, the last N logged points. Logs that print every k-th iteration (Megatron's
``--log-interval``) are read at their cadence: the range holds the logged points inside it
and is complete when every point at that cadence is present. docs/log-formats.md has the
rules with examples.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from llmbench.core.metrics import DEFAULT_WINDOW
from llmbench.errors import ConfigError

_RANGE = re.compile(r"^\s*(\d{1,12})\s*-\s*(\d{1,12})\s*$")
_LAST = re.compile(r"^\s*last\s*:\s*(\d+)\s*$")
MAX_LAST_POINTS = 9_999_999  # more logged points than any run has; int() stays cheap
WINDOW_SYNTAX = "FIRST-LAST (e.g. 35-44) or last:N (the last N logged points, N >= 2)"


@dataclass(frozen=True)
class Window:
    """``first``-``last`` (inclusive), or the last ``last_points`` logged points."""

    first: int = DEFAULT_WINDOW[0]
    last: int = DEFAULT_WINDOW[1]
    last_points: int | None = None

    def __str__(self) -> str:
        if self.last_points is not None:
            return f"last:{self.last_points}"
        return f"{self.first}-{self.last}"


def as_window(value: Window | str | Sequence[int]) -> Window:
    """A ``Window`` from a window, its text (``"35-44"``, ``"last:10"``) or a
    ``(first, last)`` pair; ``ConfigError`` names the bad value and the syntax."""
    if isinstance(value, Window):
        window = value
    elif isinstance(value, str):
        window = _parse(value)
    else:
        try:
            first, last = (int(v) for v in value)
        except (TypeError, ValueError):
            raise ConfigError(f"window {value!r}: expected {WINDOW_SYNTAX}") from None
        window = Window(first, last)
    if window.last_points is not None and window.last_points < 2:
        raise ConfigError(f"window {str(window)!r}: N must be at least 2 ({WINDOW_SYNTAX})")
    if window.last_points is None and not 0 <= window.first <= window.last:
        raise ConfigError(f"window {str(window)!r}: need 0 <= FIRST <= LAST ({WINDOW_SYNTAX})")
    return window


def _parse(text: str) -> Window:
    if match := _RANGE.match(text):
        return Window(int(match.group(1)), int(match.group(2)))
    if match := _LAST.match(text):
        digits = match.group(1).lstrip("0") or "0"
        if len(digits) > len(str(MAX_LAST_POINTS)) or int(digits) > MAX_LAST_POINTS:
            shown = digits if len(digits) <= 20 else f"{digits[:20]}... ({len(digits)} digits)"
            raise ConfigError(
                f"window 'last:{shown}': N is at most {MAX_LAST_POINTS:,} ({WINDOW_SYNTAX})"
            )
        return Window(last_points=int(digits))
    shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"
    raise ConfigError(f"window {shown!r}: expected {WINDOW_SYNTAX}")


def log_interval(iterations: Sequence[int]) -> int:
    """The logging cadence: the most common gap between consecutive logged iterations
    (sorted, unique); the smaller gap wins a tie, 1 when fewer than two are logged."""
    gaps = Counter(b - a for a, b in pairwise(iterations))
    if not gaps:
        return 1
    return min(gaps, key=lambda gap: (-gaps[gap], gap))


def cadence_is_clear(iterations: Sequence[int]) -> bool:
    """The logged iterations (sorted, unique) show their cadence: some gap between
    consecutive ones occurs at least twice. One line, or two, may not: 10 and 30 are
    every 20th iteration, or every 10th with 20 missing."""
    gaps = Counter(b - a for a, b in pairwise(iterations))
    return bool(gaps) and max(gaps.values()) >= 2


def printed_interval_fits(iterations: Sequence[int], printed: int) -> bool:
    """A log interval the framework printed decides when the lines cannot tell and every
    gap between logged iterations is a multiple of it (else it was not this run's)."""
    return (
        printed >= 1
        and not cadence_is_clear(iterations)
        and all((b - a) % printed == 0 for a, b in pairwise(iterations))
    )


def cadence_phase(iterations: Sequence[int], interval: int) -> int:
    """The remainder most logged iterations leave modulo ``interval`` (0 for Megatron,
    which logs iterations that are multiples of ``--log-interval``)."""
    if interval <= 1 or not iterations:
        return 0
    phases = Counter(i % interval for i in iterations)
    return min(phases, key=lambda phase: (-phases[phase], phase))


def points_at_cadence(first: int, last: int, interval: int, phase: int) -> int:
    """How many iterations in ``[first, last]`` the cadence logs."""
    start = first + (phase - first) % interval
    return 0 if start > last else (last - start) // interval + 1


def last_at_cadence(last: int, interval: int, phase: int) -> int:
    """The last iteration at or before ``last`` that the cadence logs."""
    return last - (last - phase) % interval


@dataclass(frozen=True)
class Selection:
    """The logged iterations a window picked and what the cadence expected there."""

    iterations: list[int]
    expected: int  # points the cadence logs in the window (N for `last:N`)
    present: int  # of those, how many were logged
    span: tuple[int, int]  # the range the statistics cover; (-1, -1) when none

    @property
    def complete(self) -> bool:
        return self.present >= self.expected

    @property
    def sparse(self) -> bool:
        """Fewer than two points can ever be in this window: no spread to measure."""
        return self.expected < 2


def select(
    window: Window, iterations: Sequence[int], interval: int, phase: int, drop_last: bool
) -> Selection:
    """The logged ``iterations`` (sorted, unique) that ``window`` averages over.

    ``last:N`` skips the first logged point (it carries compilation and warm-up) and, with
    ``drop_last`` (MaxText, whose final step may include an eval), the final one.
    """
    if window.last_points is not None:
        pool = list(iterations[1:])
        if drop_last:
            pool = pool[:-1]
        chosen = pool[-window.last_points :]
        span = (chosen[0], chosen[-1]) if chosen else (-1, -1)
        return Selection(chosen, window.last_points, len(chosen), span)
    chosen = [i for i in iterations if window.first <= i <= window.last]
    # off-cadence points (a restart may shift the phase) count towards the mean, not
    # towards completeness: the window is complete when every cadence point is present
    on_cadence = sum(1 for i in chosen if i % interval == phase)
    expected = points_at_cadence(window.first, window.last, interval, phase)
    return Selection(chosen, expected, on_cadence, (window.first, window.last))
