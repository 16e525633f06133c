"""What a profile run profiles: Nsight steps and ranks, from the config or the document.

Rank sets: ``"all"``, ``"0-8"``, ``"0,4,8-11"`` (global ranks, inclusive). Part of "what to
run": the config checks them, the launch script only renders them.
"""

from __future__ import annotations

import re

from llmbench.core.catalog import load_catalog
from llmbench.core.runspec import ProfileSettings
from llmbench.errors import ConfigError

_PART = re.compile(r"^(\d+)(?:-(\d+))?$")


def parse_ranks(text: str, world_size: int, where: str = "profile.ranks") -> tuple[int, ...]:
    """Sorted distinct ranks of ``text`` for a job of ``world_size`` ranks.

    A range may run past the last rank (the spec's ``0-8`` on an 8-GPU job means every
    rank there); a set that selects no rank of the job is an error.
    """
    if text.strip() == "all":
        return tuple(range(world_size))
    ranks: set[int] = set()
    for part in text.split(","):
        match = _PART.match(part.strip())
        if not match:
            raise ConfigError(
                f"{where}: {text!r} is not a rank set; allowed: 'all' or ranks and "
                "inclusive ranges like '0-8,16'"
            )
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if last < first:
            raise ConfigError(f"{where}: range {part.strip()!r} in {text!r} ends before it starts")
        ranks.update(range(first, min(last, world_size - 1) + 1))
    if not ranks:
        raise ConfigError(
            f"{where}: {text!r} selects no rank of a {world_size}-rank job; "
            f"allowed: ranks 0-{world_size - 1}"
        )
    return tuple(sorted(ranks))


def default_profile(source: str | None, window_last: int, steps: int) -> ProfileSettings:
    """Nsight steps (inclusive), ranks and GPU metrics the recipe document states. A
    document that states none (MaxText) profiles the steps after the timing window, where
    the profiler cannot disturb the measured iterations, on every rank."""
    profiling = load_catalog().document(source).profiling if source else None
    if profiling is None:
        return ProfileSettings(steps=[window_last + 1, steps], ranks="all", gpu_metrics=False)
    return ProfileSettings(
        steps=[profiling.start_step, profiling.stop_step],
        ranks=profiling.ranks or "all",
        gpu_metrics=False,
    )
