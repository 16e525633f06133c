"""What a side of ``llmbench compare`` names: sweeps of the history, or the references.

A selector is ``published`` (the spec's published step times, ``llmbench.aggregate.reference``)
or comma-separated terms, all of which a sweep must match:

- ``sweep=<id>`` or a bare ``<id>``; ``latest`` (the newest of the sweeps the other
  terms select) and ``latest~N`` (the one N before it)
- ``cluster=<name>``
- ``date=<YYYY-MM-DD>`` or ``date=<first>..<last>`` (inclusive, UTC days)

Examples: ``20250301T101500Z-3fa2c1``, ``cluster=eos,latest``,
``cluster=eos,date=2025-03-01..2025-03-31``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

import pandas as pd

from llmbench.errors import ConfigError
from llmbench.history.store import History, sweep_index
from llmbench.history.sweep import SWEEP_ID_RE

PUBLISHED = "published"
KEYS = ("sweep", "cluster", "date")
_LATEST_RE = re.compile(r"^latest(?:~(?P<back>[0-9]+))?$")
ALLOWED = (
    "published, or comma-separated sweep=<id>|latest|latest~N, cluster=<name>, "
    "date=YYYY-MM-DD[..YYYY-MM-DD]"
)


@dataclass(frozen=True)
class Selector:
    text: str
    published: bool = False
    sweep: str | None = None
    cluster: str | None = None
    first: str | None = None
    last: str | None = None


def _iso_day(value: str, text: str) -> str:
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise ConfigError(
            f"{text!r}: {value!r} is not a date; allowed: YYYY-MM-DD or YYYY-MM-DD..YYYY-MM-DD"
        ) from None


def parse_selector(text: str) -> Selector:
    """Parse one side of ``compare`` (module docstring); one-line errors."""
    text = text.strip()
    if text == PUBLISHED:
        return Selector(text, published=True)
    if not text:
        raise ConfigError(f"an empty selector; allowed: {ALLOWED}")
    terms: dict[str, str] = {}
    for term in text.split(","):
        key, sep, value = term.strip().partition("=")
        if not sep:
            key, value = "sweep", term.strip()
        if key not in KEYS:
            raise ConfigError(f"{text!r}: unknown selector key {key!r}; allowed: {ALLOWED}")
        if key in terms or not value:
            raise ConfigError(f"{text!r}: {key} given twice or empty; allowed: {ALLOWED}")
        terms[key] = value
    sweep = terms.get("sweep")
    if sweep is not None and not (SWEEP_ID_RE.fullmatch(sweep) or _LATEST_RE.fullmatch(sweep)):
        raise ConfigError(
            f"{text!r}: {sweep!r} is not a sweep id; allowed: an id such as "
            "20250301T101500Z-3fa2c1 (`llmbench history list`), latest or latest~N"
        )
    first = last = None
    if "date" in terms:
        lo, sep, hi = terms["date"].partition("..")
        first = _iso_day(lo, text)
        last = _iso_day(hi, text) if sep else first
        if first > last:
            raise ConfigError(
                f"{text!r}: date range {terms['date']!r} ends before it starts; allowed: "
                "first..last with first <= last"
            )
    return Selector(text, sweep=sweep, cluster=terms.get("cluster"), first=first, last=last)


def resolve(
    history: History, selector: Selector, index: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The ``sweep_index`` rows a selector names; one-line errors when it names none."""
    index = sweep_index(history) if index is None else index
    if index.empty:
        raise ConfigError(
            f"history {history.where!r} holds no sweeps; allowed: add one with "
            "`llmbench history add results/` (or history.add: true in the config)"
        )
    rows = index
    if selector.cluster is not None:
        rows = rows[rows["cluster"] == selector.cluster]
        if rows.empty:
            clusters = ", ".join(sorted(index["cluster"].unique()))
            raise ConfigError(
                f"{selector.text!r}: cluster {selector.cluster!r} has no sweeps in the "
                f"history; allowed: {clusters}"
            )
    if selector.first is not None:
        rows = rows[(rows["date"] >= selector.first) & (rows["date"] <= selector.last)]
        if rows.empty:
            raise ConfigError(
                f"{selector.text!r}: no sweep from {selector.first} to {selector.last}; "
                f"allowed: dates from {index['date'].min()} to {index['date'].max()}"
            )
    if selector.sweep is None:
        return rows.reset_index(drop=True)
    latest = _LATEST_RE.match(selector.sweep)
    if latest:
        back = int(latest.group("back") or 0)
        if back >= len(rows):
            raise ConfigError(
                f"{selector.text!r}: {selector.sweep} goes back {back} sweeps but only "
                f"{len(rows)} match; allowed: latest~0 to latest~{len(rows) - 1}"
            )
        return rows.iloc[[len(rows) - 1 - back]].reset_index(drop=True)
    found = rows[rows["sweep_id"] == selector.sweep]
    if found.empty:
        newest = index["sweep_id"].iloc[-1]
        where = "matching the other terms" if len(rows) < len(index) else "in the history"
        raise ConfigError(
            f"sweep {selector.sweep!r} is not {where} {history.where!r}; allowed: one of "
            f"the {len(rows)} sweeps `llmbench history list` shows (newest: {newest})"
        )
    return found.reset_index(drop=True)
