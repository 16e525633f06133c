"""Measured step time against reference step time (ReFrame-style performance references).

A reference is a step time for one key (workload, size, dtype, gpu_type, gpus) under weak
scaling (an optional ``scaling`` column names strong-scaling references). Built-in
references are the spec's published results tables (``published_results()``); a user file
(a previous sweep's ``runs.parquet``, or a CSV/YAML with the key columns + ``step_time_s``)
overrides them key by key.

Judgement, with ``deviation_pct = (measured - reference) / reference * 100``:
- ``within``: |deviation| <= tolerance * 100
- ``faster``: deviation < -tolerance * 100 (step time below the reference)
- ``slower``: deviation > +tolerance * 100
- ``no_reference``: no reference for the run's key
- ``not_comparable``: its inter-node traffic went over TCP sockets on a cluster with IB or
  EFA (the runs table's ``socket_fallback``): it measured the fallback, not the cluster
  (the deviation is still given)
A run without a measured step time (not a success), or with an implausible one (MFU above
100 %, the runs table's ``implausible`` column), has a null verdict and deviation. A run
whose ranks ran in another image than the reference's (the runs table's ``reference_stack``
false) is judged too, and its ``reference_source`` says that the software stack differs.
``verdict_reason`` says why a run has no plain verdict.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from llmbench.errors import ConfigError
from llmbench.spec.catalog import published_results

REFERENCE_KEYS = ("workload", "size", "dtype", "gpu_type", "gpus", "scaling")
REFERENCE_COLUMNS = (*REFERENCE_KEYS, "step_time_s", "source")
SOCKET_FALLBACK_REASON = "not comparable: inter-node traffic over TCP sockets"
OTHER_STACK = "not the reference's software stack (reference_stack false: see image)"
"""Added to ``reference_source`` where the run's image is not the reference's."""
COMPARE_DTYPES = {
    "reference_step_time_s": "float64",
    "reference_source": "string",
    "deviation_pct": "float64",
    "verdict": "string",
    "verdict_reason": "string",
}
_KEY_DTYPES = {
    "workload": "string", "size": "string", "dtype": "string", "gpu_type": "string",
    "gpus": "int64", "scaling": "string", "step_time_s": "float64", "source": "string",
}  # fmt: skip


def _typed(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    frame = frame.copy()
    if "scaling" not in frame.columns:
        frame["scaling"] = "weak"
    frame["scaling"] = frame["scaling"].fillna("weak")
    missing = [c for c in REFERENCE_COLUMNS if c not in frame.columns]
    if missing:
        raise ConfigError(
            f"{where}: reference columns missing: {', '.join(missing)}; "
            f"needed: {', '.join(c for c in REFERENCE_COLUMNS if c != 'scaling')}"
        )
    frame = frame.loc[:, list(REFERENCE_COLUMNS)].astype(_KEY_DTYPES)
    bad = frame[~(frame.step_time_s > 0)]
    if not bad.empty:
        raise ConfigError(
            f"{where}: step_time_s must be a positive number of seconds; "
            f"got {bad.step_time_s.iloc[0]!r} for gpus={bad.gpus.iloc[0]}"
        )
    return frame.reset_index(drop=True)


def builtin_references() -> pd.DataFrame:
    """The spec's published step times (table rows, weak scaling), source = document."""
    rows = [
        {
            "workload": r.workload,
            "size": r.size,
            "dtype": r.dtype,
            "gpu_type": r.gpu_type,
            "gpus": r.gpus,
            "scaling": "weak",
            "step_time_s": r.step_time_s,
            "source": f"published: {r.source}",
        }
        for r in published_results()
        if r.kind == "table"
    ]
    frame = _typed(pd.DataFrame(rows, columns=list(REFERENCE_COLUMNS)), "published results")
    return frame.drop_duplicates(list(REFERENCE_KEYS), keep="first", ignore_index=True)


def load_references(path: str | Path) -> pd.DataFrame:
    """A user reference file: ``.parquet`` (a previous sweep's runs table: successful perf
    runs, ``step_time_mean_s`` as the reference), ``.csv`` or ``.yaml``/``.yml`` (a list of
    mappings, or ``{references: [...]}``, with the key columns and ``step_time_s``)."""
    path = Path(path)
    where = f"reference file {path}"
    if not path.is_file():
        raise ConfigError(f"reference.file: {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        frame = pd.read_parquet(path)
        if "step_time_mean_s" in frame.columns:
            ok = frame["status"].eq("success") if "status" in frame.columns else True
            if "variant" in frame.columns:
                ok = ok & frame["variant"].eq("perf")
            frame = frame[ok].rename(columns={"step_time_mean_s": "step_time_s"})
    elif suffix == ".csv":
        frame = pd.read_csv(path)
    elif suffix in (".yaml", ".yml"):
        data = yaml.safe_load(path.read_text()) or []
        if isinstance(data, dict):
            data = data.get("references", [])
        if not isinstance(data, list):
            raise ConfigError(f"{where}: expected a list of references, got {type(data).__name__}")
        frame = pd.DataFrame(data)
    else:
        raise ConfigError(
            f"reference.file: {str(path)!r} has suffix {suffix!r}; allowed: .parquet, .csv, "
            ".yaml, .yml"
        )
    if "source" not in frame.columns:
        frame["source"] = f"file: {path.name}"
    frame["source"] = frame["source"].fillna(f"file: {path.name}")
    return _typed(frame, where)


def merge_references(*frames: pd.DataFrame) -> pd.DataFrame:
    """Later frames override earlier ones key by key."""
    parts = [f for f in frames if f is not None and not f.empty]
    if not parts:
        return _typed(pd.DataFrame(columns=list(REFERENCE_COLUMNS)), "references")
    merged = pd.concat(parts, ignore_index=True)
    return merged.drop_duplicates(list(REFERENCE_KEYS), keep="last", ignore_index=True)


def references_for(path: str | Path | None) -> pd.DataFrame:
    """Built-in references, overridden by the user file when one is given."""
    builtin = builtin_references()
    return merge_references(builtin, load_references(path)) if path else builtin


def compare(runs: pd.DataFrame, references: pd.DataFrame, tolerance: float = 0.05) -> pd.DataFrame:
    """``runs`` with ``reference_step_time_s``, ``reference_source``, ``deviation_pct``
    (= (measured - reference) / reference * 100), ``verdict`` and ``verdict_reason``
    added."""
    if not tolerance >= 0:
        raise ConfigError(f"reference.tolerance: {tolerance!r} must be >= 0 (a fraction)")
    out = runs.copy()  # existing comparison columns are replaced in place
    refs = merge_references(references)
    lookup = refs.set_index(list(REFERENCE_KEYS))
    keys = pd.MultiIndex.from_frame(
        out.loc[:, list(REFERENCE_KEYS)].astype({k: _KEY_DTYPES[k] for k in REFERENCE_KEYS})
    )
    pos = lookup.index.get_indexer(keys) if len(lookup) else np.full(len(out), -1)
    found = pos >= 0
    ref_t = np.full(len(out), np.nan)
    ref_src = np.full(len(out), None, dtype=object)
    ref_t[found] = lookup["step_time_s"].to_numpy(float)[pos[found]]
    ref_src[found] = lookup["source"].to_numpy(object)[pos[found]]
    if "reference_stack" in out.columns:
        other = found & out["reference_stack"].eq(False).fillna(False).to_numpy(bool)
        ref_src[other] = [f"{source}; {OTHER_STACK}" for source in ref_src[other]]
    measured = pd.to_numeric(out["step_time_mean_s"], errors="coerce").to_numpy(float)
    measured_ok = np.isfinite(measured) & (measured > 0)
    if "status" in out.columns:
        measured_ok &= out["status"].eq("success").fillna(False).to_numpy(bool)
    if "implausible" in out.columns:  # MFU above 100 %: never `within` (nor faster)
        measured_ok &= out["implausible"].isna().to_numpy(bool)
    judged = found & measured_ok
    deviation = np.full(len(out), np.nan)
    deviation[judged] = (measured[judged] - ref_t[judged]) / ref_t[judged] * 100
    limit = tolerance * 100 * (1 + 1e-12)
    verdict = np.full(len(out), None, dtype=object)
    verdict[~found] = "no_reference"
    verdict[judged] = "within"
    verdict[judged & (deviation < -limit)] = "faster"
    verdict[judged & (deviation > limit)] = "slower"
    reason = np.full(len(out), None, dtype=object)
    reason[found & ~measured_ok] = "no measured step time"
    if "implausible" in out.columns:
        odd = found & out["implausible"].notna().to_numpy(bool)
        reason[odd] = "implausible: " + out["implausible"].astype(object).to_numpy()[odd]
    if "socket_fallback" in out.columns:
        sockets = out["socket_fallback"].fillna(False).to_numpy(bool)
        verdict[sockets & judged] = "not_comparable"
        reason[sockets] = SOCKET_FALLBACK_REASON
    out["reference_step_time_s"] = ref_t
    out["reference_source"] = ref_src
    out["deviation_pct"] = deviation
    out["verdict"] = verdict
    out["verdict_reason"] = reason
    return out.astype(COMPARE_DTYPES)
