"""Tidy tables from run records and parsed logs: one row per run, one per training step.

Every column's type, unit and meaning is written once, in docs/tables.md (a test keeps it
equal to ``RUN_DTYPES`` and ``STEP_DTYPES``). Both tables are built column by column (one
implementation, fit for 100,000 runs): ``spec_columns`` gives the runs' facts,
``runs_table_from_frames`` joins them with the log summaries and derives the metrics,
``steps_table_from_frame`` tags the parsed steps.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from llmbench.aggregate.reference import COMPARE_DTYPES
from llmbench.aggregate.run_facts import (
    Peak,
    bf16_peak_tflops,
    model_flops,
    run_model,
    run_precision,
)
from llmbench.core import metrics, run_folder
from llmbench.core.launchers import cluster_type
from llmbench.core.runspec import DEFAULT_RELEASE, current_release
from llmbench.job.outcome import run_outcome
from llmbench.telemetry.energy import ENERGY_DTYPES, WindowEnergy

TRANSPORT_DTYPES: dict[str, str] = {
    "net_transport": "string",
    "gdr": "string",
    "nvls": "string",
    "collnet": "string",
    "nccl_plugin": "string",
    "nccl_version": "string",
    "socket_fallback": "bool",
}
"""The runs table's transport columns (docs/transport.md)."""
FABRICS_WITH_RDMA = ("ib", "efa")
"""Site fabrics over which inter-node traffic over TCP sockets is a fallback."""

RUN_ORDER = ("workload", "size", "gpu_type", "scaling", "release", "variant", "dtype", "gpus")
"""The order of both tables' rows: a scaling group's runs (workload, size, GPU type,
scaling) lie together, so a reader of one group reads only its part of the steps file."""


RUN_DTYPES: dict[str, str] = {
    **{
        k: "string"
        for k in (
            "run_id",
            "workload",
            "size",
            "dtype",
            "gpu_type",
            "scaling",
            "variant",
            "release",
            "precision",
            "model",
        )
    },
    "gpus": "int64",
    "nodes": "int64",
    "attempt": "int64",
    "attempts": "int64",
    "earlier_attempts": "string",
    "status": "string",
    "reason": "string",
    "exit_code": "Int64",
    "end_detail": "string",
    "overlap": "string",
    "framework": "string",
    "seq_len": "int64",
    "micro_batch_size": "int64",
    "global_batch_size": "int64",
    "tp": "int64",
    "pp": "int64",
    "cp": "int64",
    "dp": "int64",
    "ga": "int64",
    "vp": "Int64",
    "ep": "Int64",
    "fsdp": "boolean",
    "steps": "int64",
    "window_first": "int64",
    "window_last": "int64",
    "step_time_mean_s": "float64",
    "step_time_std_s": "float64",
    "step_time_last_s": "float64",
    "n_iterations": "int64",
    "max_iteration": "int64",
    "logged_tflops_per_gpu_mean": "float64",
    "log_interval": "int64",
    "restarts": "int64",
    "tokens_per_s": "float64",
    "tokens_per_s_per_gpu": "float64",
    "train_tokens": "float64",
    "days_to_train": "float64",
    "model_flops_per_sample": "float64",
    "achieved_tflops_per_gpu": "float64",
    "peak_tflops_per_gpu": "float64",
    "peak_source": "string",
    "mfu": "float64",
    "bf16_peak_tflops_per_gpu": "float64",
    "mfu_bf16": "float64",
    **ENERGY_DTYPES,
    **TRANSPORT_DTYPES,
    "implausible": "string",
    **COMPARE_DTYPES,
    "sweep_id": "string",
    "started_at": "datetime64[ms, UTC]",
    "finished_at": "datetime64[ms, UTC]",
    "duration_s": "float64",
    "host": "string",
    "nodelist": "string",
    "image": "string",
    "reference_stack": "boolean",
    "git_sha": "string",
    "llmbench_version": "string",
    "python_version": "string",
    "torch_version": "string",
    "transformers_version": "string",
    "slurm_job_id": "string",
    "cluster_type": "string",
    "workload_id": "string",
    "log_path": "string",
}

STEP_DTYPES: dict[str, str] = {
    "run_id": "string",
    "workload": "string",
    "size": "string",
    "dtype": "string",
    "gpu_type": "string",
    "gpus": "int64",
    "variant": "string",
    "attempt": "int64",
    "iteration": "int64",
    "step_time_s": "float64",
    "loss": "float64",
    "tflops_per_gpu": "float64",
    "in_window": "bool",
}


# --- the runs table: one row of per-run facts and one log summary per run, column-wise ---

SUMMARY_COLUMNS = (
    "status", "reason", "step_time_mean_s", "step_time_std_s", "step_time_last_s",
    "n_iterations", "max_iteration", "tflops_per_gpu_mean", "log_interval", "restarts",
)  # fmt: skip
SUMMARY_DEFAULTS = {"log_interval": 1, "restarts": 0}
"""Values for summary columns that summaries written before they existed lack."""


def spec_columns(
    records: Sequence[Mapping[str, Any]],
    peaks: Sequence[Peak | None],
    histories: Sequence[tuple[int, str] | None],
    nodelists: Sequence[str | None],
) -> dict[str, list[Any]]:
    """The per-run facts known before parsing (keys, configuration, peak, provenance),
    column by column: a list per column, one entry per record (a fifth of the time of a
    dict per run, and a frame built from lists instead of dicts). ``histories`` are
    (attempts so far, earlier attempts' outcomes) from
    ``llmbench.job.attempts.attempt_history``; ``nodelists`` the attempts' Slurm nodes."""
    specs = [rec["spec"] for rec in records]
    provs = [rec.get("provenance", {}) for rec in records]
    pars = [spec.get("parallelism", {}) for spec in specs]
    runs = [
        history or (rec["attempt"], "") for rec, history in zip(records, histories, strict=True)
    ]
    cols: dict[str, list[Any]] = {"run_id": [rec["run_id"] for rec in records]}
    for key in ("workload", "size", "dtype", "gpu_type", "gpus", "nodes", "scaling", "variant"):
        cols[key] = [spec[key] for spec in specs]
    cols["release"] = [current_release(spec.get("release") or DEFAULT_RELEASE) for spec in specs]
    cols["precision"] = [run_precision(spec) for spec in specs]
    cols["model"] = [run_model(spec["workload"], spec["size"]) for spec in specs]
    cols["attempt"] = [rec["attempt"] for rec in records]
    cols["attempts"] = [attempts for attempts, _ in runs]
    cols["earlier_attempts"] = [earlier for _, earlier in runs]
    for key in ("failure_reason", "ended_by", "end_detail"):
        cols[key] = [rec.get(key) or "" for rec in records]
    cols["overlap"] = [overlap_text(rec.get("overlap") or ()) for rec in records]
    cols["exit_code"] = [rec.get("exit_code") for rec in records]
    for key in ("framework", "seq_len", "micro_batch_size", "global_batch_size"):
        cols[key] = [spec[key] for spec in specs]
    for key in ("tp", "pp", "cp", "dp", "ga"):
        cols[key] = [par.get(key, 1) for par in pars]
    cols["vp"] = [par.get("vp") for par in pars]
    cols["ep"] = [par.get("ep") for par in pars]
    cols["fsdp"] = [shards_parameters(par.get("fsdp")) for par in pars]
    cols["steps"] = [spec["steps"] for spec in specs]
    cols["window_first"] = [spec["window"][0] for spec in specs]
    cols["window_last"] = [spec["window"][1] for spec in specs]
    cols["model_flops_per_sample"] = [model_flops(spec["model"]) for spec in specs]
    cols["peak_tflops_per_gpu"] = [
        peak.flops_per_s / metrics.FLOPS_PER_TFLOPS if peak else math.nan for peak in peaks
    ]
    cols["peak_source"] = [peak.source if peak else "" for peak in peaks]
    cols["bf16_peak_tflops_per_gpu"] = [bf16_peak_tflops(spec["gpu_type"]) for spec in specs]
    cols["started_at"] = [rec["started_at"] for rec in records]
    cols["finished_at"] = [rec["finished_at"] for rec in records]
    cols["host"] = [prov.get("host") for prov in provs]
    cols["nodelist"] = list(nodelists)
    stacks = [(spec.get("parity") or {}).get("stack") for spec in specs]
    # the image the ranks ran in (none in a Python environment); whether it is the one the
    # reference ran the spec document in (null without a reference)
    cols["image"] = [
        (stack["image"] or None) if stack else spec.get("image") or None
        for spec, stack in zip(specs, stacks, strict=True)
    ]
    cols["reference_stack"] = [stack["reference_stack"] if stack else None for stack in stacks]
    for key in ("git_sha", "llmbench_version", "python_version", "torch_version",
                "transformers_version", "slurm_job_id"):  # fmt: skip
        cols[key] = [prov.get(key) for prov in provs]
    cols["cluster_type"] = [
        rec.get("cluster_type") or cluster_type(spec.get("launcher"))
        for rec, spec in zip(records, specs, strict=True)
    ]
    cols["workload_id"] = [
        rec.get("workload_id") or prov.get("slurm_job_id")
        for rec, prov in zip(records, provs, strict=True)
    ]
    cols["log_path"] = [f"{rec['run_id']}/{rec['log']}" for rec in records]
    return cols


def shards_parameters(fsdp: Any) -> bool:
    """A run's ``fsdp`` as a yes/no: Megatron-Bridge's switch, or MaxText's FSDP degree
    (above 1: the data-parallel ranks shard the parameters)."""
    return fsdp is True or (not isinstance(fsdp, bool) and isinstance(fsdp, int) and fsdp > 1)


def overlap_text(processes: Sequence[Mapping[str, Any]]) -> str:
    """A record's ``overlap`` (the sweep's processes alive on the host when the attempt
    started or ended, ``llmbench.job.runner``) as ``<run>/attempt-<n>: 2 processes at start``,
    one entry per attempt; empty when there were none."""
    counts: dict[str, Counter[str]] = {}
    for proc in processes:
        counts.setdefault(str(proc.get("attempt")), Counter())[str(proc.get("when"))] += 1
    return "; ".join(
        f"{attempt}: "
        + ", ".join(f"{n} process{'es' if n > 1 else ''} at {when}" for when, n in whens.items())
        for attempt, whens in counts.items()
    )


def attempt_nodelist(run_dir: str | Path, record: Mapping[str, Any]) -> str | None:
    """The Slurm nodes of the reported attempt (its ``job.json``); None when run locally."""
    try:
        with open(Path(run_dir) / record.get("attempt_dir", "") / run_folder.JOB) as fh:
            return json.load(fh).get("nodelist") or None
    except (OSError, ValueError, AttributeError):
        return None


def _outcomes(specs: pd.DataFrame, summaries: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Status and reason per run: ``llmbench.job.outcome.run_outcome`` of the log's verdict and
    how the run ended (exit code, a kill from outside, llmbench's time limit or watchdog)."""
    n = len(specs)

    def column(frame: pd.DataFrame, name: str) -> list[Any]:
        if name not in frame.columns:
            return [""] * n
        return frame[name].astype(object).where(frame[name].notna(), "").tolist()

    exit_codes = pd.to_numeric(specs["exit_code"], errors="coerce").astype(object)
    exit_codes = exit_codes.where(exit_codes.notna(), None).tolist()
    # judged once per distinct (status, reason, exit code, kill, end): a sweep has few
    seen: dict[tuple[Any, ...], tuple[str, str]] = {}
    judged = []
    for key in zip(
        column(summaries, "status"),
        column(summaries, "reason"),
        [None if code is None else int(code) for code in exit_codes],
        column(specs, "failure_reason"),
        column(specs, "ended_by"),
        strict=True,
    ):
        if key not in seen:
            seen[key] = run_outcome(*key)
        judged.append(seen[key])
    status = np.array([s for s, _ in judged], dtype=object)
    reason = np.array([r for _, r in judged], dtype=object)
    return status, reason


def runs_table_from_frames(
    specs: pd.DataFrame,
    summaries: pd.DataFrame,
    train_tokens: float,
    energy: pd.DataFrame | None = None,
    transport: pd.DataFrame | None = None,
    fabric: str | None = None,
) -> pd.DataFrame:
    """The runs table from one row per run of ``spec_columns`` facts (``specs``) and of log
    summaries (``summaries``, same order, ``SUMMARY_COLUMNS``), column by column (the one
    implementation of every derived metric; it must scale to 100,000 runs).

    tokens_per_s, days_to_train, achieved_tflops_per_gpu and mfu are the formulas of
    ``llmbench.core.metrics`` applied to whole columns. Null where the step time is not a
    positive number, and mfu null where the peak is unknown (docs/tables.md). ``energy``:
    one ``llmbench.telemetry.energy.WindowEnergy`` row per run (same order), else NaN
    with the reason that no telemetry was read. ``transport``: one transport report per
    run (``llmbench.job.run_record.read_run_transport``), else empty; ``fabric`` the cluster's
    (``site_fabric``)."""
    if len(specs) != len(summaries):
        raise ValueError(f"{len(specs)} spec rows but {len(summaries)} summary rows")
    summ = summaries.reset_index(drop=True)
    out = specs.reset_index(drop=True).copy()
    out["status"], out["reason"] = _outcomes(out, summ)
    out = out.drop(columns=["failure_reason", "ended_by"], errors="ignore")
    for col in SUMMARY_COLUMNS[2:]:
        if col in SUMMARY_DEFAULTS:
            given = summ[col] if col in summ.columns else pd.Series(math.nan, index=summ.index)
            values = pd.to_numeric(given, errors="coerce").fillna(SUMMARY_DEFAULTS[col])
        else:
            values = pd.to_numeric(summ[col], errors="coerce")
        out[col] = values.to_numpy()
    out["logged_tflops_per_gpu_mean"] = out.pop("tflops_per_gpu_mean")
    # the formulas of llmbench.core.metrics, on whole columns; null where the step time is not
    # a positive finite number (a NaN step time propagates)
    step = out["step_time_mean_s"].astype(float)
    step_ok = step.where(step.gt(0) & step.lt(math.inf))
    gbs, flops, gpus = out["global_batch_size"], out["model_flops_per_sample"], out["gpus"]
    tps = metrics.tokens_per_s(out["seq_len"], gbs, step_ok)
    out["tokens_per_s"] = tps
    out["tokens_per_s_per_gpu"] = metrics.tokens_per_s_per_gpu(tps, gpus)
    out["train_tokens"] = float(train_tokens)
    out["days_to_train"] = metrics.days_to_train(train_tokens, tps)
    out["achieved_tflops_per_gpu"] = metrics.tflops_per_gpu(gbs, flops, step_ok, gpus)
    peak_flops = out["peak_tflops_per_gpu"] * metrics.FLOPS_PER_TFLOPS
    out["mfu"] = metrics.mfu(gbs, flops, step_ok, gpus, peak_flops)
    # beside the MFU of the precision the GEMMs run in, the one against the BF16 peak: the
    # only one comparable across precisions (docs/metrics.md)
    bf16_flops = out["bf16_peak_tflops_per_gpu"] * metrics.FLOPS_PER_TFLOPS
    out["mfu_bf16"] = metrics.mfu(gbs, flops, step_ok, gpus, bf16_flops)
    if energy is None:  # every run the same values: one per column, broadcast
        unread = WindowEnergy(energy_reason="telemetry not read").as_dict()
        for col in ENERGY_DTYPES:
            out[col] = unread.get(col)
    else:
        for col in ENERGY_DTYPES:
            out[col] = energy[col].to_numpy() if col in energy.columns else None
    transport_columns(out, transport, fabric)
    # Above the datasheet peak cannot be true: flagged, and never judged against a reference.
    out["implausible"] = np.where(out["mfu"].gt(1), "mfu_above_100pct", None)
    out["started_at"] = pd.to_datetime(out["started_at"], utc=True, format="ISO8601")
    out["finished_at"] = pd.to_datetime(out["finished_at"], utc=True, format="ISO8601")
    out["duration_s"] = (out["finished_at"] - out["started_at"]).dt.total_seconds()
    return runs_table_frame(out)


def transport_columns(
    out: pd.DataFrame, transport: pd.DataFrame | None, fabric: str | None
) -> None:
    """The transport columns of ``out`` from one transport report per run; a socket
    fallback needs inter-node traffic over sockets and a cluster with IB or EFA."""
    if transport is None or transport.empty:
        for col, dtype in TRANSPORT_DTYPES.items():
            out[col] = False if dtype == "bool" else ""
        return
    for col in TRANSPORT_DTYPES:
        if col != "socket_fallback":
            given = transport[col] if col in transport.columns else pd.Series("", index=out.index)
            out[col] = given.fillna("").astype(str).to_numpy()
    sockets = transport.get("socket_inter_node", pd.Series(False, index=transport.index))
    out["socket_fallback"] = sockets.fillna(False).astype(bool).to_numpy() & (
        fabric in FABRICS_WITH_RDMA
    )


def site_fabric(declared: str | None, nodes: pd.DataFrame | None) -> str | None:
    """The cluster's fabric: the site's ``fabric`` value, else what preflight found on
    its nodes (``fabric`` of the nodes table: ib or efa where a node has such devices)."""
    if declared:
        return declared
    if nodes is None or "fabric" not in nodes.columns:
        return None
    found = [f for f in nodes["fabric"].dropna().astype(str) if f in FABRICS_WITH_RDMA]
    return found[0] if found else None


def runs_table_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Give a frame with the runs columns the schema's order and types, sorted by keys."""
    for col in RUN_DTYPES:
        if col not in frame.columns:
            frame[col] = None
    frame = frame.loc[:, list(RUN_DTYPES)].astype(RUN_DTYPES)
    return frame.sort_values(list(RUN_ORDER), ignore_index=True)


# --- the steps table -----------------------------------------------------------------------

_STEP_KEYS = ("run_id", "attempt", "workload", "size", "dtype", "gpu_type", "gpus", "variant")
_STEP_VALUES = ("iteration", "step_time_s", "loss", "tflops_per_gpu")


def steps_table_from_frame(specs: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """The steps table from ``spec_columns`` facts and one long frame of parsed steps with a
    ``run_id`` column (iteration, step_time_s, loss, tflops_per_gpu): runs in the runs
    table's order (``RUN_ORDER``), each run's steps in their given order; ``in_window``:
    window_first <= iteration <= window_last of the run."""
    # Keys are typed once per run and then gathered per step (50x fewer conversions); the
    # steps' run ids are factorized in one pass and only the distinct ones looked up.
    keys = specs.loc[:, [*_STEP_KEYS, "window_first", "window_last"]].reset_index(drop=True)
    keys = keys.astype({k: STEP_DTYPES[k] for k in _STEP_KEYS})
    codes, uniques = pd.factorize(steps["run_id"].astype(STEP_DTYPES["run_id"]))
    pos = np.append(pd.Index(keys["run_id"]).get_indexer(pd.Index(uniques)), -1)
    idx = pos[codes]  # a null run id (code -1) picks the appended -1: no spec row
    if (idx < 0).any():
        missing = steps["run_id"].iloc[int(np.argmax(idx < 0))]
        raise ValueError(f"steps for run {missing!r} have no spec row")
    rank = np.empty(len(specs), dtype=np.int64)
    ordered = specs.reset_index(drop=True).sort_values(list(RUN_ORDER), kind="stable").index
    rank[ordered.to_numpy()] = np.arange(len(specs))
    order = np.argsort(rank[idx], kind="stable")  # by run, each run's steps as given
    idx = idx[order]
    out: dict[str, Any] = {k: keys[k].array.take(idx) for k in _STEP_KEYS}
    for col in _STEP_VALUES:
        out[col] = steps[col].to_numpy(dtype=STEP_DTYPES[col])[order]
    it = out["iteration"]
    out["in_window"] = (it >= keys["window_first"].to_numpy()[idx]) & (
        it <= keys["window_last"].to_numpy()[idx]
    )
    # every column is a new array already: no copy into 2-D blocks (a fifth of the time)
    return pd.DataFrame(out, columns=list(STEP_DTYPES), copy=False).astype(STEP_DTYPES)
