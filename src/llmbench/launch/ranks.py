"""Rank sets for profiling: ``"all"``, ``"0-8"``, ``"0,4,8-11"`` (global ranks, inclusive)."""

from __future__ import annotations

import re

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
