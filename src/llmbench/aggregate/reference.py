"""Measured runs against published references (ReFrame-style performance references).

Two kinds of reference, tried in this order:

- **keyed**: a step time for one key (workload, size, dtype, gpu_type, gpus, scaling): the
  spec's published tables (``builtin_references()``, weak scaling), overridden key by key by
  a user file (a previous sweep's ``runs.parquet``, or a CSV/YAML with the key columns,
  ``step_time_s`` and optionally ``gbs``).
- **summary**: NVIDIA's Megatron-Bridge performance-summary rows (``published_summaries()``),
  each measured with one model, GPU type and count, precision recipe, GBS and container.
  A run is judged against a row of the same model, GPU type and precision recipe *and* the
  same GBS; the row with the run's GPU count and container is preferred.

A verdict is only given at the reference's GBS (a keyed reference without ``gbs`` is
taken at the run's). ``verdict_basis`` is ``exact`` where the run's GPU count and container
are the reference's and, for a summary row, its parallelism too (MBS, TP, PP, CP, VP, EP,
FSDP), else ``approximate`` and ``verdict_note`` names each difference. The
verdict compares tokens/s/GPU (the cross-release metric: the frameworks' TFLOPS formulas
changed between releases), written as a step-time deviation so that positive is slower:
``deviation_pct = (reference tokens/s/GPU / measured tokens/s/GPU - 1) * 100``, which at
the reference's GBS and GPU count is ``(measured - reference) / reference * 100`` of the
step time. ``reference_step_time_s`` is the step time at the run's GBS and GPU count that
matches the reference's tokens/s/GPU.

Verdicts:
- ``within``: |deviation| <= tolerance * 100
- ``faster``: deviation < -tolerance * 100 (step time below the reference)
- ``slower``: deviation > +tolerance * 100
- ``no_reference``: no reference for the run's model, GPU type and precision
- ``not_comparable``: its inter-node traffic went over TCP sockets on a cluster with IB or
  EFA (the runs table's ``socket_fallback``): it measured the fallback, not the cluster
  (the deviation is still given)
- null, with ``verdict_reason``: references exist, but none at the run's GBS; or the run has
  no measured step time (not a success), or an implausible one (MFU above 100 %, the runs
  table's ``implausible`` column).
A run whose ranks ran in another image than the reference's (the runs table's
``reference_stack`` false) is judged too: against a keyed reference its
``reference_source`` says that the software stack differs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from llmbench.core.catalog import load_catalog, published_results
from llmbench.core.catalog.published import PublishedResult, load_summaries
from llmbench.core.yamlfile import read_yaml_file
from llmbench.errors import ConfigError

REFERENCE_KEYS = ("workload", "size", "dtype", "gpu_type", "gpus", "scaling")
REFERENCE_COLUMNS = (*REFERENCE_KEYS, "step_time_s", "source")
OPTIONAL_COLUMNS = ("gbs", "container")
"""Keyed reference columns a user file may leave out: the GBS (then the run's is taken)
and the container (then the run's stack is not compared)."""
SUMMARY_MATCH = ("model", "gpu_type", "precision")
PARALLELISM = {"mbs": ("micro_batch_size", "MBS"), "tp": ("tp", "TP"), "pp": ("pp", "PP"),
               "cp": ("cp", "CP"), "vp": ("vp", "VP"), "ep": ("ep", "EP"),
               "fsdp": ("fsdp", "FSDP")}  # fmt: skip
"""A summary row's parallelism field -> (the runs table's column, its name in a note)."""
SUMMARY_COLUMNS = (*SUMMARY_MATCH, "gbs", "gpus", "container", "tokens_per_s_per_gpu", "source",
                   *PARALLELISM)  # fmt: skip
SOCKET_FALLBACK_REASON = "not comparable: inter-node traffic over TCP sockets"
OTHER_STACK = "not the reference's software stack (reference_stack false: see image)"
"""Added to ``reference_source`` where the run's image is not the reference's."""
COMPARE_DTYPES = {
    "reference_step_time_s": "float64",
    "reference_source": "string",
    "deviation_pct": "float64",
    "verdict": "string",
    "verdict_reason": "string",
    "verdict_basis": "string",
    "verdict_note": "string",
    "reference_tokens_per_s_per_gpu": "float64",
    "reference_gbs": "Int64",
    "reference_gpus": "Int64",
    "reference_container": "string",
}
_KEY_DTYPES = {
    "workload": "string", "size": "string", "dtype": "string", "gpu_type": "string",
    "gpus": "int64", "scaling": "string", "step_time_s": "float64", "source": "string",
    "gbs": "Int64", "container": "string",
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
    for col in OPTIONAL_COLUMNS:
        if col not in frame.columns:
            frame[col] = None
    columns = [*REFERENCE_COLUMNS, *OPTIONAL_COLUMNS]
    frame = frame.loc[:, columns].astype({c: _KEY_DTYPES[c] for c in columns})
    bad = frame[~(frame.step_time_s > 0)]
    if not bad.empty:
        raise ConfigError(
            f"{where}: step_time_s must be a positive number of seconds; "
            f"got {bad.step_time_s.iloc[0]!r} for gpus={bad.gpus.iloc[0]}"
        )
    return frame.reset_index(drop=True)


def builtin_references() -> pd.DataFrame:
    """The spec's published step times (table rows, weak scaling), source = document,
    with the GBS and the image each was measured at."""
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
            "gbs": r.gbs,
            "container": r.container or None,
        }
        for r in published_results()
        if r.kind == "table"
    ]
    frame = _typed(pd.DataFrame(rows, columns=[*REFERENCE_COLUMNS, *OPTIONAL_COLUMNS]),
                   "published results")  # fmt: skip
    return frame.drop_duplicates(list(REFERENCE_KEYS), keep="first", ignore_index=True)


def _summary_row(result: PublishedResult) -> dict[str, object]:
    return {
        "model": load_catalog().workload(result.workload).sizes[result.size],
        "gpu_type": result.gpu_type,
        "precision": result.precision,
        "gbs": result.gbs,
        "gpus": result.gpus,
        "container": result.container,
        "tokens_per_s_per_gpu": result.tokens_per_s_per_gpu,
        "source": f"published summary ({result.release}): {result.source}",
        **{k: result.parallelism[k] for k in PARALLELISM},
    }


@functools.cache
def _summaries() -> pd.DataFrame:
    return pd.DataFrame([_summary_row(r) for r in load_summaries()], columns=SUMMARY_COLUMNS)


def published_summaries() -> pd.DataFrame:
    """NVIDIA's performance-summary rows as references (``SUMMARY_COLUMNS``)."""
    return _summaries().copy()


def load_references(path: str | Path) -> pd.DataFrame:
    """A user reference file: ``.parquet`` (a previous sweep's runs table: successful perf
    runs, ``step_time_mean_s`` as the reference), ``.csv`` or ``.yaml``/``.yml`` (a list of
    mappings, or ``{references: [...]}``, with the key columns and ``step_time_s``, and
    optionally ``gbs`` and ``container``)."""
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
            renames = {"step_time_mean_s": "step_time_s", "global_batch_size": "gbs",
                       "image": "container"}  # fmt: skip
            frame = frame[ok].drop(columns=["gbs", "container"], errors="ignore")
            frame = frame.rename(columns=renames)
    elif suffix == ".csv":
        frame = pd.read_csv(path)
    elif suffix in (".yaml", ".yml"):
        data = read_yaml_file(path) or []
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


def normal_image(image: object) -> str:
    """An image reference as the summaries write it: ``nvcr.io#nvidia/nemo:25.09.00`` (an
    enroot URI) and ``nvcr.io/nvidia/nemo:25.09`` are one container."""
    if image is None or image is pd.NA or (isinstance(image, float) and math.isnan(image)):
        return ""
    text = str(image).strip().replace("#", "/", 1)
    return text.removesuffix(".00")


@dataclass(frozen=True)
class _Candidate:
    """A reference a run may be judged against: a keyed reference taken at the run's GPU
    count, or a summary row."""

    source: str
    gbs: int
    gpus: int
    container: str
    tokens_per_s_per_gpu: float
    parallelism: tuple[tuple[str, Any], ...] = ()
    """A summary row's (field, value) of ``PARALLELISM`` (none for a keyed reference)."""


def _setting(name: str, value: Any) -> Any:
    """A parallelism value as a note compares it: no VP, EP, TP ... is 1 (VP 1 and none
    both mean one stage per rank), FSDP a yes/no."""
    missing = value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
    if name == "fsdp":
        return False if missing else bool(value)
    return 1 if missing else int(value)


def _shown(name: str, value: Any) -> str:
    if name == "fsdp":
        return "on" if value else "off"
    return "none" if name == "vp" and value == 1 else str(value)


def _differences(
    run_gpus: int, run_image: str, ref: _Candidate, run_parallelism: dict[str, Any]
) -> list[str]:
    """What a run does not share with its reference, each named: every parallelism field
    the summary row states (where the run's is known), GPU count, container."""
    notes = []
    for name, published in ref.parallelism:
        if run_parallelism.get(name) is None:
            continue
        mine, theirs = _setting(name, run_parallelism[name]), _setting(name, published)
        if mine != theirs:
            label = PARALLELISM[name][1]
            notes.append(f"{label} {_shown(name, mine)}, reference {_shown(name, theirs)}")
    if run_gpus != ref.gpus:
        notes.append(f"GPUs {run_gpus}, reference {ref.gpus}")
    if ref.container and normal_image(run_image) != normal_image(ref.container):
        notes.append(f"container {normal_image(run_image) or 'none'}, reference "
                     f"{normal_image(ref.container)}")  # fmt: skip
    return notes


def _pick(candidates: Sequence[_Candidate], gbs: int, gpus: int, image: str) -> _Candidate | None:
    """The candidate at the run's GBS closest to the run: its GPU count first, then its
    container, then the nearest GPU count."""
    same_gbs = [c for c in candidates if c.gbs == gbs]
    if not same_gbs:
        return None
    return min(
        same_gbs,
        key=lambda c: (
            c.gpus != gpus,
            normal_image(c.container) != normal_image(image),
            abs(math.log(c.gpus / gpus)) if gpus > 0 else 0.0,
        ),
    )


def _summary_candidates(summaries: pd.DataFrame) -> dict[tuple[Any, ...], list[_Candidate]]:
    """Summary rows by (model, GPU type, precision)."""
    out: dict[tuple[Any, ...], list[_Candidate]] = {}
    for row in summaries.to_dict("records"):
        candidate = _Candidate(
            str(row["source"]),
            int(row["gbs"]),
            int(row["gpus"]),
            str(row["container"]),
            float(row["tokens_per_s_per_gpu"]),
            tuple((k, row[k]) for k in PARALLELISM if k in row),
        )
        out.setdefault(tuple(row[k] for k in SUMMARY_MATCH), []).append(candidate)
    return out


def _column(runs: pd.DataFrame, name: str, default: object) -> list[Any]:
    if name not in runs.columns:
        return [default] * len(runs)
    return runs[name].astype(object).where(runs[name].notna(), default).tolist()


def _match(
    out: pd.DataFrame,
    refs: pd.DataFrame,
    pos: np.ndarray,
    by_model: dict[tuple[Any, ...], list[_Candidate]],
) -> tuple[list[_Candidate | None], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each run's reference (keyed first, else a summary row at its GBS), the reason where
    none is at its GBS, the verdict basis and note, and whether any reference exists."""
    keyed = refs[["step_time_s", "source", "gbs", "container"]]  # in the order of lookup
    keyed = keyed.astype(object).where(keyed.notna(), None).to_dict("records")
    n = len(out)
    gbs = [int(v) for v in _column(out, "global_batch_size", 0)]
    seq = [int(v) for v in _column(out, "seq_len", 0)]
    gpus = out["gpus"].astype(int).tolist()
    images = [str(v) for v in _column(out, "image", "")]
    gpu_types = out["gpu_type"].astype(str).tolist()
    models = _column(out, "model", None)
    precisions = _column(out, "precision", None)
    # the run's own parallelism, where the runs table has it (None: not compared)
    parallel = {k: _column(out, column, None) for k, (column, _) in PARALLELISM.items()}
    matched: list[_Candidate | None] = [None] * n
    reason = np.full(n, None, dtype=object)
    basis = np.full(n, None, dtype=object)
    note = np.full(n, None, dtype=object)
    found = np.zeros(n, dtype=bool)  # a reference for the run's model, GPU type, precision
    for i in range(n):
        if pos[i] >= 0:  # its key's step time, at the reference's GBS (else the run's)
            k = keyed[pos[i]]
            g = gbs[i] if k["gbs"] is None else int(k["gbs"])
            tps = seq[i] * g / (k["step_time_s"] * gpus[i])
            candidates = [_Candidate(k["source"], g, gpus[i], k["container"] or "", tps)]
            where = f"{k['source']} is"
        else:
            candidates = by_model.get((models[i], gpu_types[i], precisions[i]), [])
            where = f"the published {models[i]} {precisions[i]} rows on {gpu_types[i]} are"
        if not candidates:
            continue
        found[i] = True
        matched[i] = _pick(candidates, gbs[i], gpus[i], images[i])
        if matched[i] is None:
            allowed = ", ".join(str(g) for g in sorted({c.gbs for c in candidates}))
            reason[i] = f"no reference at GBS {gbs[i]}: {where} at GBS {allowed}"
            continue
        mine = {k: v[i] for k, v in parallel.items()}
        diffs = _differences(gpus[i], images[i], matched[i], mine)
        basis[i] = "approximate" if diffs else "exact"
        note[i] = "; ".join(diffs) or None
    return matched, reason, basis, note, found


def compare(
    runs: pd.DataFrame,
    references: pd.DataFrame,
    tolerance: float = 0.05,
    summaries: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """``runs`` with the comparison columns (``COMPARE_DTYPES``) added: keyed references
    first, then the summary rows (``published_summaries()`` unless given)."""
    if not tolerance >= 0:
        raise ConfigError(f"reference.tolerance: {tolerance!r} must be >= 0 (a fraction)")
    out = runs.copy()  # existing comparison columns are replaced in place
    refs = merge_references(references)
    lookup = refs.set_index(list(REFERENCE_KEYS))
    keys = pd.MultiIndex.from_frame(
        out.loc[:, list(REFERENCE_KEYS)].astype({k: _KEY_DTYPES[k] for k in REFERENCE_KEYS})
    )
    pos = lookup.index.get_indexer(keys) if len(lookup) else np.full(len(out), -1)
    by_model = _summary_candidates(published_summaries() if summaries is None else summaries)
    matched, reason, basis, note, found = _match(out, refs, pos, by_model)
    n = len(out)
    gbs = [int(v) for v in _column(out, "global_batch_size", 0)]
    seq = [int(v) for v in _column(out, "seq_len", 0)]
    gpus = out["gpus"].astype(int).tolist()
    at_gbs = np.array([m is not None for m in matched], dtype=bool)
    ref_tps = np.array([m.tokens_per_s_per_gpu if m else np.nan for m in matched], dtype=float)
    ref_src = np.array([m.source if m else None for m in matched], dtype=object)
    if "reference_stack" in out.columns:  # a summary row names its own container instead
        other = at_gbs & (pos >= 0) & out["reference_stack"].eq(False).fillna(False).to_numpy(bool)
        ref_src[other] = [f"{source}; {OTHER_STACK}" for source in ref_src[other]]
    measured_tps = pd.to_numeric(out["tokens_per_s_per_gpu"], errors="coerce").to_numpy(float)
    measured = pd.to_numeric(out["step_time_mean_s"], errors="coerce").to_numpy(float)
    measured_ok = np.isfinite(measured) & (measured > 0) & np.isfinite(measured_tps)
    measured_ok &= measured_tps > 0
    if "status" in out.columns:
        measured_ok &= out["status"].eq("success").fillna(False).to_numpy(bool)
    if "implausible" in out.columns:  # MFU above 100 %: never `within` (nor faster)
        measured_ok &= out["implausible"].isna().to_numpy(bool)
    judged = at_gbs & measured_ok
    deviation = np.full(n, np.nan)
    deviation[judged] = (ref_tps[judged] / measured_tps[judged] - 1) * 100
    ref_t = np.full(n, np.nan)
    ref_t[at_gbs] = (np.asarray(seq, float)[at_gbs] * np.asarray(gbs, float)[at_gbs]
                     / (ref_tps[at_gbs] * np.asarray(gpus, float)[at_gbs]))  # fmt: skip
    limit = tolerance * 100 * (1 + 1e-9)
    verdict = np.full(n, None, dtype=object)
    verdict[~found] = "no_reference"
    verdict[judged] = "within"
    verdict[judged & (deviation < -limit)] = "faster"
    verdict[judged & (deviation > limit)] = "slower"
    reason[at_gbs & ~measured_ok] = "no measured step time"
    if "implausible" in out.columns:
        odd = at_gbs & out["implausible"].notna().to_numpy(bool)
        reason[odd] = "implausible: " + out["implausible"].astype(object).to_numpy()[odd]
    if "socket_fallback" in out.columns:
        sockets = out["socket_fallback"].fillna(False).to_numpy(bool)
        verdict[sockets & judged] = "not_comparable"
        reason[sockets] = SOCKET_FALLBACK_REASON
    basis[~judged] = None
    note[~judged] = None
    out["reference_step_time_s"] = ref_t
    out["reference_source"] = ref_src
    out["deviation_pct"] = deviation
    out["verdict"] = verdict
    out["verdict_reason"] = reason
    out["verdict_basis"] = basis
    out["verdict_note"] = note
    out["reference_tokens_per_s_per_gpu"] = ref_tps
    out["reference_gbs"] = pd.array([m.gbs if m else None for m in matched], dtype="Int64")
    out["reference_gpus"] = pd.array([m.gpus if m else None for m in matched], dtype="Int64")
    out["reference_container"] = [m.container or None if m else None for m in matched]
    return out.astype(COMPARE_DTYPES)
