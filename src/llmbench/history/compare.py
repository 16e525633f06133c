"""``llmbench compare A B``: per key, side B's step time against side A's.

Keys: (workload, size, dtype, gpu_type, gpus, scaling, variant), successful ``perf``
runs only (the diagnostic variants are never compared for performance). Per key: the
ratio B / A of step times with its block-bootstrap interval and a verdict
(``llmbench.history.stats``), and which provenance fields differ between the key's runs
on the two sides. For the whole comparison: every provenance field whose values differ
(images, versions, nodes, config and environment hashes).

A run tabulated again by a later sweep without being rerun (same cluster, run, attempt
and start time) counts once on a side.

A side may also be a results folder (``results/``, as the workflow wrote it): it is
added to a temporary history with the checks of ``llmbench history add`` and compared
like a stored sweep, so two sweeps compare before either joins a history.

Every stored file is checked before it is read (``llmbench.history.read``): a damaged
sweep is left out of both sides and of the run-to-run spread, and the comparison says
which; a side whose every sweep is damaged is an error.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.dataset as ds

from llmbench.aggregate.reference import builtin_references
from llmbench.core.results_layout import TABLES
from llmbench.errors import ConfigError
from llmbench.history.read import SweepReader
from llmbench.history.select import Selector, parse_selector, resolve
from llmbench.history.stats import (
    CONFIDENCE,
    MIN_ITERATIONS,
    TOLERANCE,
    key_seed,
    ratio_interval,
    run_spread,
    verdict,
)
from llmbench.history.store import History, add_sweep, open_history, sweep_index

KEYS = ("workload", "size", "dtype", "gpu_type", "gpus", "scaling", "variant")
RUN_PROVENANCE = (
    "cluster", "image", "llmbench_version", "git_sha", "python_version", "torch_version",
    "transformers_version", "host", "nodelist",
)  # fmt: skip
SWEEP_PROVENANCE = ("config_sha256", "python_env_sha256", "venv_freeze_sha256", "images")
_RUN_COLUMNS = (*KEYS, "run_id", "attempt", "status", "started_at", "sweep_id")
_STEP_COLUMNS = ("run_id", "attempt", "iteration", "step_time_s", "sweep_id")
RESULT_COLUMNS = (
    *KEYS, "runs_a", "runs_b", "iterations_a", "iterations_b", "step_time_a_s",
    "step_time_b_s", "run_spread_pct", "ratio", "ci_low", "ci_high", "change_pct", "verdict",
    "changed",
)  # fmt: skip
SPREAD_SWEEPS = 30
"""Recent sweeps per cluster whose runs tell how much a key's step time varies by run."""
MIN_SPREAD_RUNS = 4
PUBLISHED_LABEL = "published"

Key = tuple


@dataclass(frozen=True)
class Side:
    """One side of a comparison: runs with their window series, or reference values."""

    label: str
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    series: Mapping[Key, list[np.ndarray]] = field(default_factory=dict)
    reference: Mapping[Key, float] | None = None
    sweeps: pd.DataFrame = field(default_factory=pd.DataFrame)

    def keys(self) -> set[Key]:
        return set(self.reference or self.series)


def _key_tuples(frame: pd.DataFrame) -> list[Key]:
    return [
        tuple(int(v) if k == "gpus" else str(v) for k, v in zip(KEYS, row, strict=True))
        for row in frame.loc[:, list(KEYS)].itertuples(index=False, name=None)
    ]


def published_side() -> Side:
    """The spec's published step times (weak-scaling table rows), as ``perf`` keys."""
    refs = builtin_references().assign(variant="perf")
    values = refs["step_time_s"].astype(float).tolist()
    return Side(PUBLISHED_LABEL, reference=dict(zip(_key_tuples(refs), values, strict=True)))


def _intact(frame: pd.DataFrame, reader: SweepReader) -> pd.DataFrame:
    """The rows of sweeps the reader has not left out (a sweep's runs may have read
    before its steps file was found damaged)."""
    return frame[~frame["sweep"].isin(list(reader.skipped))].reset_index(drop=True)


def load_side(reader: SweepReader, selector: Selector, index: pd.DataFrame | None = None) -> Side:
    """The successful perf runs of the intact sweeps a selector names, with their
    series; an error when every sweep it names is damaged."""
    if selector.published:
        return published_side()
    sweeps = resolve(reader.history, selector, index)
    perf_ok = (ds.field("status") == "success") & (ds.field("variant") == "perf")
    runs = reader.read(sweeps, "runs", [*_RUN_COLUMNS, *RUN_PROVENANCE[1:]], filter=perf_ok)
    window = ds.field("in_window") & (ds.field("variant") == "perf")
    steps = reader.read(sweeps, "steps", _STEP_COLUMNS, filter=window)
    records = reader.read(sweeps, "sweep", ["sweep_id", *SWEEP_PROVENANCE])
    damaged = [reader.skipped[s] for s in sweeps["sweep_id"] if s in reader.skipped]
    if len(damaged) == len(sweeps):
        what = "is damaged" if len(sweeps) == 1 else f"and all {len(sweeps) - 1} others are damaged"
        raise ConfigError(
            f"{selector.text!r}: sweep {damaged[0].sweep_id} {what} ({damaged[0].reason}); "
            "allowed: a side with an intact sweep (a damaged file is never read as numbers)"
        )
    runs, steps, records = (_intact(f, reader) for f in (runs, steps, records))
    runs = runs.drop_duplicates(["cluster", "run_id", "attempt", "started_at"], ignore_index=True)
    return Side(selector.text, runs, _series(runs, steps), sweeps=records)


def _series(runs: pd.DataFrame, steps: pd.DataFrame) -> dict[Key, list[np.ndarray]]:
    """Per key, each run's window step times in iteration order."""
    ids = ["sweep_id", "run_id", "attempt"]
    if runs.empty or steps.empty:
        return {}
    runs = runs.assign(_key=_key_tuples(runs), _run=np.arange(len(runs)))
    merged = steps.merge(runs[[*ids, "_run"]], on=ids, how="inner")
    merged = merged.sort_values(["_run", "iteration"], kind="stable")
    values = merged["step_time_s"].to_numpy(float)
    run_of = merged["_run"].to_numpy()
    cuts = np.flatnonzero(np.diff(run_of)) + 1
    out: dict[Key, list[np.ndarray]] = {}
    keys = runs["_key"].tolist()
    for run, part in zip(run_of[np.r_[0, cuts]], np.split(values, cuts), strict=True):
        finite = part[np.isfinite(part) & (part > 0)]
        if len(finite):
            out.setdefault(keys[run], []).append(finite)
    return out


def _values(frame: pd.DataFrame, column: str) -> set[str]:
    if column not in frame.columns:
        return set()
    return {str(v) for v in frame[column].dropna().unique() if str(v) != ""}


def _changed_fields(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    return [f for f in RUN_PROVENANCE if _values(a, f) != _values(b, f)]


def provenance_changes(a: Side, b: Side) -> list[dict[str, object]]:
    """Every provenance field whose values differ between the two sides."""
    if a.reference is not None or b.reference is not None:
        return []
    changes = []
    for fields, table_a, table_b in (
        (RUN_PROVENANCE, a.runs, b.runs),
        (SWEEP_PROVENANCE, a.sweeps, b.sweeps),
    ):
        for name in fields:
            va, vb = _values(table_a, name), _values(table_b, name)
            if va != vb:
                changes.append({"field": name, "a": sorted(va), "b": sorted(vb)})
    return changes


def _side_data(side: Side, key: Key) -> tuple[list[np.ndarray] | float | None, int, int]:
    """(series or reference value, runs, iterations) of a key on one side."""
    if side.reference is not None:
        value = side.reference.get(key)
        return (value, 0, 0) if value is not None else (None, 0, 0)
    runs = side.series.get(key)
    if not runs:
        return None, 0, 0
    return runs, len(runs), sum(len(r) for r in runs)


def spread_by_key(reader: SweepReader, index: pd.DataFrame, clusters: set[str]) -> dict[Key, float]:
    """Per key, the sd of log step time between runs (``stats.run_spread``) over the
    last ``SPREAD_SWEEPS`` sweeps of each of ``clusters``; keys with fewer than
    ``MIN_SPREAD_RUNS`` runs there have none."""
    rows = index[index["cluster"].isin(sorted(clusters))].groupby("cluster").tail(SPREAD_SWEEPS)
    perf_ok = (ds.field("status") == "success") & (ds.field("variant") == "perf")
    columns = [*KEYS, "run_id", "attempt", "started_at", "step_time_mean_s"]
    runs = _intact(reader.read(rows, "runs", columns, filter=perf_ok), reader)
    runs = runs.drop_duplicates(["cluster", "run_id", "attempt", "started_at"])
    runs = runs[runs["step_time_mean_s"].gt(0)]
    if runs.empty:
        return {}
    runs = runs.assign(_key=_key_tuples(runs), _log=np.log(runs["step_time_mean_s"].astype(float)))
    spread = {}
    for key, part in runs.groupby("_key", sort=False):
        if len(part) >= MIN_SPREAD_RUNS:
            spread[key] = run_spread(part["_log"].to_numpy(), part["cluster"].to_numpy())
    return spread


def compare_sides(
    a: Side,
    b: Side,
    tolerance: float = TOLERANCE,
    confidence: float = CONFIDENCE,
    spread: Mapping[Key, float] | None = None,
) -> pd.DataFrame:
    """One row per key (``RESULT_COLUMNS``); see the module docstring. ``spread``: the
    between-run sd of log step time per key (``spread_by_key``)."""
    spread = spread or {}
    if a.reference is not None and b.reference is not None:
        raise ConfigError("compare: both sides are the published references; allowed: one")
    if not 0 <= tolerance < 1:
        raise ConfigError(f"--tolerance: {tolerance!r}; allowed: a fraction in [0, 1)")
    if not 0 < confidence < 1:
        raise ConfigError(f"--confidence: {confidence!r}; allowed: a fraction in (0, 1)")
    if a.reference is not None:
        keys = b.keys()
    elif b.reference is not None:
        keys = a.keys()
    else:
        keys = a.keys() | b.keys()
    runs_a = a.runs.assign(_key=_key_tuples(a.runs)) if len(a.runs) else a.runs
    runs_b = b.runs.assign(_key=_key_tuples(b.runs)) if len(b.runs) else b.runs
    rows = []
    for key in sorted(keys):
        data_a, n_runs_a, n_a = _side_data(a, key)
        data_b, n_runs_b, n_b = _side_data(b, key)
        row = dict(zip(KEYS, key, strict=True))
        row.update(runs_a=n_runs_a, runs_b=n_runs_b, iterations_a=n_a, iterations_b=n_b)
        enough = all(
            isinstance(d, float) or (d is not None and n >= MIN_ITERATIONS)
            for d, n in ((data_a, n_a), (data_b, n_b))
        )
        run_sd = spread.get(key, 0.0)
        ratio = (
            ratio_interval(data_a, data_b, key_seed(key), confidence, run_sd=run_sd)
            if enough
            else None
        )
        row.update(
            step_time_a_s=_point(data_a),
            step_time_b_s=_point(data_b),
            run_spread_pct=run_sd * 100 if key in spread else np.nan,
            ratio=ratio.ratio if ratio else _point(data_b) / _point(data_a),
            ci_low=ratio.low if ratio else np.nan,
            ci_high=ratio.high if ratio else np.nan,
            verdict=verdict(ratio, tolerance),
        )
        row["change_pct"] = (row["ratio"] - 1) * 100
        if len(runs_a) and len(runs_b):
            row["changed"] = ", ".join(
                _changed_fields(runs_a[runs_a["_key"] == key], runs_b[runs_b["_key"] == key])
            )
        else:
            row["changed"] = ""
        rows.append(row)
    return pd.DataFrame(rows, columns=list(RESULT_COLUMNS))


def _point(data: list[np.ndarray] | float | None) -> float:
    if data is None:
        return np.nan
    if isinstance(data, float):
        return data
    return float(np.mean([r.mean() for r in data]))


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    tolerance: float
    confidence: float
    keys: pd.DataFrame
    provenance: list[dict[str, object]]
    skipped: list[str] = field(default_factory=list)
    """One line per damaged sweep left out (``Skipped.line``)."""
    unchecked: list[str] = field(default_factory=list)
    """Sweeps read without checksums: stored before sweep records held them."""
    unpublished: list[str] = field(default_factory=list)
    """Keys compared with ``published`` that have no published step time."""

    @property
    def regressions(self) -> int:
        return int((self.keys["verdict"] == "slower").sum())


def is_results_folder(text: str) -> bool:
    """A side that names a folder holding a sweep's ``tables/`` (not a selector)."""
    return Path(text).is_dir() and (Path(text) / TABLES).exists()


def compare(
    history: History | None,
    a: str,
    b: str,
    tolerance: float = TOLERANCE,
    confidence: float = CONFIDENCE,
) -> Comparison:
    """Compare the sides two selectors (``llmbench.history.select``) or results folders
    name."""
    with tempfile.TemporaryDirectory(prefix="llmbench-compare-") as scratch:
        folders = open_history(scratch)
        sides = [_source(text, history, folders) for text in (a, b)]
        return _compare(a, b, sides, history or folders, tolerance, confidence)


def _source(
    text: str, history: History | None, folders: History
) -> tuple[Selector, History | None]:
    """A side's selector and the history it reads: a results folder's sweep, added to
    ``folders``; else the selector's, in ``history``."""
    if is_results_folder(text):
        added = add_sweep(folders, text)
        return Selector(text, sweep=added.sweep_id), folders
    selector = parse_selector(text)
    if history is None and not selector.published:
        raise ConfigError(
            "compare: no history given; allowed: --history PATH or URL, or history.path in "
            f"the config (for {text!r}), or a results folder as the side"
        )
    return selector, history


def _compare(
    a: str,
    b: str,
    sides: list[tuple[Selector, History | None]],
    spread_history: History,
    tolerance: float,
    confidence: float,
) -> Comparison:
    readers: dict[int, tuple[SweepReader, pd.DataFrame]] = {}
    loaded = []
    for selector, history in sides:
        if history is None:
            loaded.append(published_side())
            continue
        if id(history) not in readers:
            readers[id(history)] = (SweepReader(history), sweep_index(history))
        reader, index = readers[id(history)]
        loaded.append(load_side(reader, selector, index))
    side_a, side_b = loaded
    clusters = {str(c) for side in loaded for c in side.runs.get("cluster", [])}
    spread = {}
    if clusters:
        if id(spread_history) not in readers:
            readers[id(spread_history)] = (SweepReader(spread_history), sweep_index(spread_history))
        spread = spread_by_key(*readers[id(spread_history)], clusters)
    keys = compare_sides(side_a, side_b, tolerance, confidence, spread)
    unpublished = [
        " ".join(str(v) for v in row[list(KEYS)])
        for side, column in ((side_a, "step_time_a_s"), (side_b, "step_time_b_s"))
        if side.reference is not None
        for _, row in keys[keys[column].isna()].iterrows()
    ]
    all_readers = [reader for reader, _ in readers.values()]
    return Comparison(
        a, b, tolerance, confidence, keys, provenance_changes(side_a, side_b),
        skipped=[s.line() for r in all_readers for s in r.skipped.values()],
        unchecked=sorted({u for r in all_readers for u in r.unchecked}),
        unpublished=unpublished,
    )  # fmt: skip
