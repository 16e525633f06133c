"""Tidy tables from run records and parsed logs: one row per run, one per training step.

Every column's type, unit and meaning: docs/tables.md.

``runs`` columns, keys first (units in names):
- keys: run_id, workload, size, dtype, gpu_type, gpus, nodes, scaling, variant, attempt
- outcome: status (success | incomplete | invalid | failed | no_data), reason, exit_code
- configuration: framework, seq_len, micro_batch_size, global_batch_size, tp, pp, cp, dp,
  ga, steps, window_first, window_last
- measured (over the window, population std): step_time_mean_s, step_time_std_s,
  step_time_last_s, n_iterations, max_iteration, logged_tflops_per_gpu_mean
- derived: tokens_per_s = seq_len * GBS / step_time_mean_s; tokens_per_s_per_gpu;
  train_tokens and days_to_train = train_tokens / tokens_per_s / 86400;
  model_flops_per_sample; achieved_tflops_per_gpu = GBS * flops / step_time / gpus / 1e12;
  peak_tflops_per_gpu and peak_source; mfu = achieved / peak (a fraction)
- reference (``llmbench.reference.compare``): reference_step_time_s, reference_source,
  deviation_pct = (step_time_mean_s - reference) / reference * 100, verdict
  (within | faster | slower | no_reference; null when the run has no step time)
- provenance: started_at, finished_at (UTC), duration_s, host, git_sha, llmbench_version,
  python_version, torch_version, transformers_version, slurm_job_id, log_path
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from llmbench import flops as flops_mod
from llmbench import metrics

KEY_COLUMNS = (
    "run_id",
    "workload",
    "size",
    "dtype",
    "gpu_type",
    "gpus",
    "nodes",
    "scaling",
    "variant",
    "attempt",
)

RUN_DTYPES: dict[str, str] = {
    **{
        k: "string"
        for k in ("run_id", "workload", "size", "dtype", "gpu_type", "scaling", "variant")
    },
    "gpus": "int64",
    "nodes": "int64",
    "attempt": "int64",
    "attempts": "int64",
    "earlier_attempts": "string",
    "status": "string",
    "reason": "string",
    "exit_code": "Int64",
    "framework": "string",
    "seq_len": "int64",
    "micro_batch_size": "int64",
    "global_batch_size": "int64",
    "tp": "int64",
    "pp": "int64",
    "cp": "int64",
    "dp": "int64",
    "ga": "int64",
    "steps": "int64",
    "window_first": "int64",
    "window_last": "int64",
    "step_time_mean_s": "float64",
    "step_time_std_s": "float64",
    "step_time_last_s": "float64",
    "n_iterations": "int64",
    "max_iteration": "int64",
    "logged_tflops_per_gpu_mean": "float64",
    "tokens_per_s": "float64",
    "tokens_per_s_per_gpu": "float64",
    "train_tokens": "float64",
    "days_to_train": "float64",
    "model_flops_per_sample": "float64",
    "achieved_tflops_per_gpu": "float64",
    "peak_tflops_per_gpu": "float64",
    "peak_source": "string",
    "mfu": "float64",
    "reference_step_time_s": "float64",
    "reference_source": "string",
    "deviation_pct": "float64",
    "verdict": "string",
    "started_at": "datetime64[ms, UTC]",
    "finished_at": "datetime64[ms, UTC]",
    "duration_s": "float64",
    "host": "string",
    "git_sha": "string",
    "llmbench_version": "string",
    "python_version": "string",
    "torch_version": "string",
    "transformers_version": "string",
    "slurm_job_id": "string",
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


@dataclass(frozen=True)
class Peak:
    """Peak dense FLOP/s of one device for one dtype, and where the number came from."""

    flops_per_s: float
    source: str


def peak_for(spec: Mapping[str, Any], cpu_peak: Mapping[str, Any] | None) -> Peak | None:
    """Peak FLOP/s per device: measured once per machine for the CPU (the calibration
    rule's output), from the catalog's datasheet table for GPUs."""
    if spec["gpu_type"] == "cpu":
        if cpu_peak is None:
            return None
        flops = cpu_peak["peak_flops_per_device"][spec["dtype"]]
        return Peak(flops, f"measured: {cpu_peak['method']}, {cpu_peak['threads']} thread(s)")
    from llmbench.catalog import load_catalog  # GPU datasheet peaks

    tflops = load_catalog().gpu(spec["gpu_type"]).peak_tflops[spec["dtype"]]
    return Peak(tflops * 1e12, f"datasheet: {spec['gpu_type']} dense {spec['dtype']}")


def model_flops(model: Mapping[str, Any]) -> float:
    """Model FLOPs per sample for a run spec's ``model`` mapping."""
    shape = flops_mod.ModelShape(**{k: model[k] for k in flops_mod.ModelShape.__dataclass_fields__})
    return flops_mod.model_flops_per_sample(model.get("flops_formula", "llama"), shape)


def outcome(
    exit_code: int | None, summary: Mapping[str, Any], failure_reason: str | None = None
) -> tuple[str, str]:
    """The run's status: the log's verdict, but a non-zero exit is never a success, and
    an attempt killed from outside fails with the scheduler's reason."""
    if failure_reason:
        return "failed", failure_reason
    status, reason = summary["status"], summary.get("reason") or ""
    if exit_code not in (0, None) and status != "failed":
        return "failed", f"exit_code_{exit_code}"
    return status, reason


def run_row(
    record: Mapping[str, Any],
    summary: Mapping[str, Any],
    peak: Peak | None,
    train_tokens: float,
) -> dict[str, Any]:
    """One row of the runs table."""
    spec, prov = record["spec"], record.get("provenance", {})
    par = spec.get("parallelism", {})
    status, reason = outcome(record.get("exit_code"), summary, record.get("failure_reason"))
    step_s = summary["step_time_mean_s"]
    gbs, gpus, seq = spec["global_batch_size"], spec["gpus"], spec["seq_len"]
    flops_sample = model_flops(spec["model"])
    ok = step_s is not None and math.isfinite(step_s) and step_s > 0
    tps = metrics.tokens_per_s(seq, gbs, step_s) if ok else math.nan
    achieved = metrics.achieved_flops_per_gpu(gbs, flops_sample, step_s, gpus) if ok else math.nan
    started = pd.Timestamp(record["started_at"])
    finished = pd.Timestamp(record["finished_at"])
    return {
        **{
            k: spec[k]
            for k in (
                "workload",
                "size",
                "dtype",
                "gpu_type",
                "gpus",
                "nodes",
                "scaling",
                "variant",
            )
        },
        "run_id": record["run_id"],
        "attempt": record["attempt"],
        "attempts": record["attempt"],
        "earlier_attempts": "",
        "status": status,
        "reason": reason,
        "exit_code": record.get("exit_code"),
        "framework": spec["framework"],
        "seq_len": seq,
        "micro_batch_size": spec["micro_batch_size"],
        "global_batch_size": gbs,
        **{k: par.get(k, 1) for k in ("tp", "pp", "cp", "dp", "ga")},
        "steps": spec["steps"],
        "window_first": spec["window"][0],
        "window_last": spec["window"][1],
        "step_time_mean_s": step_s,
        "step_time_std_s": summary["step_time_std_s"],
        "step_time_last_s": summary["step_time_last_s"],
        "n_iterations": summary["n_iterations"],
        "max_iteration": summary["max_iteration"],
        "logged_tflops_per_gpu_mean": summary.get("tflops_per_gpu_mean", math.nan),
        "tokens_per_s": tps,
        "tokens_per_s_per_gpu": tps / gpus,
        "train_tokens": train_tokens,
        "days_to_train": metrics.days_to_train(train_tokens, tps) if ok else math.nan,
        "model_flops_per_sample": flops_sample,
        "achieved_tflops_per_gpu": achieved / 1e12,
        "peak_tflops_per_gpu": peak.flops_per_s / 1e12 if peak else math.nan,
        "peak_source": peak.source if peak else "",
        "mfu": achieved / peak.flops_per_s if peak else math.nan,
        "started_at": started,
        "finished_at": finished,
        "duration_s": (finished - started).total_seconds(),
        **{
            k: prov.get(k)
            for k in (
                "host",
                "git_sha",
                "llmbench_version",
                "python_version",
                "torch_version",
                "transformers_version",
                "slurm_job_id",
            )
        },
        "log_path": f"{record['run_id']}/{record['log']}",
    }


def runs_table(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Typed runs table, keys first, sorted by keys."""
    frame = pd.DataFrame(list(rows), columns=list(RUN_DTYPES))
    frame = frame.astype(RUN_DTYPES)
    return frame.sort_values(
        ["workload", "size", "gpu_type", "scaling", "variant", "dtype", "gpus"],
        ignore_index=True,
    )


def steps_table(parts: Iterable[tuple[Mapping[str, Any], pd.DataFrame]]) -> pd.DataFrame:
    """Typed per-iteration table from (record, parsed steps) pairs."""
    frames = []
    for record, steps in parts:
        spec = record["spec"]
        lo, hi = spec["window"]
        frame = steps.loc[:, ["iteration", "step_time_s", "loss", "tflops_per_gpu"]].copy()
        frame["in_window"] = frame["iteration"].between(lo, hi)
        frame["run_id"] = record["run_id"]
        frame["attempt"] = record["attempt"]
        for key in ("workload", "size", "dtype", "gpu_type", "gpus", "variant"):
            frame[key] = spec[key]
        frames.append(frame)
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in STEP_DTYPES.items()})
    return pd.concat(frames, ignore_index=True)[list(STEP_DTYPES)].astype(STEP_DTYPES)


# --- vectorised path: the workflow's aggregate rule and the benchmark use it ---------------

SPEC_COLUMNS = (
    "run_id", "workload", "size", "dtype", "gpu_type", "gpus", "nodes", "scaling", "variant",
    "attempt", "attempts", "earlier_attempts", "failure_reason", "exit_code", "framework",
    "seq_len", "micro_batch_size", "global_batch_size",
    "tp", "pp", "cp", "dp", "ga", "steps", "window_first", "window_last",
    "model_flops_per_sample", "peak_tflops_per_gpu", "peak_source", "started_at",
    "finished_at", "host", "git_sha", "llmbench_version", "python_version", "torch_version",
    "transformers_version", "slurm_job_id", "log_path",
)  # fmt: skip
SUMMARY_COLUMNS = (
    "status", "reason", "step_time_mean_s", "step_time_std_s", "step_time_last_s",
    "n_iterations", "max_iteration", "tflops_per_gpu_mean",
)  # fmt: skip


def spec_row(
    record: Mapping[str, Any],
    peak: Peak | None,
    history: tuple[int, str] | None = None,
) -> dict[str, Any]:
    """The per-run facts known before parsing: keys, configuration, peak, provenance;
    ``history`` is (attempts so far, earlier attempts' outcomes) from
    ``llmbench.attempts.attempt_history``."""
    attempts, earlier = history or (record["attempt"], "")
    spec, prov = record["spec"], record.get("provenance", {})
    par = spec.get("parallelism", {})
    return {
        "run_id": record["run_id"],
        **{k: spec[k] for k in ("workload", "size", "dtype", "gpu_type", "gpus", "nodes",
                                "scaling", "variant")},
        "attempt": record["attempt"],
        "attempts": attempts,
        "earlier_attempts": earlier,
        "failure_reason": record.get("failure_reason") or "",
        "exit_code": record.get("exit_code"),
        "framework": spec["framework"],
        "seq_len": spec["seq_len"],
        "micro_batch_size": spec["micro_batch_size"],
        "global_batch_size": spec["global_batch_size"],
        **{k: par.get(k, 1) for k in ("tp", "pp", "cp", "dp", "ga")},
        "steps": spec["steps"],
        "window_first": spec["window"][0],
        "window_last": spec["window"][1],
        "model_flops_per_sample": model_flops(spec["model"]),
        "peak_tflops_per_gpu": peak.flops_per_s / 1e12 if peak else math.nan,
        "peak_source": peak.source if peak else "",
        "started_at": record["started_at"],
        "finished_at": record["finished_at"],
        **{k: prov.get(k) for k in ("host", "git_sha", "llmbench_version", "python_version",
                                    "torch_version", "transformers_version", "slurm_job_id")},
        "log_path": f"{record['run_id']}/{record['log']}",
    }  # fmt: skip


def runs_table_from_frames(
    specs: pd.DataFrame, summaries: pd.DataFrame, train_tokens: float
) -> pd.DataFrame:
    """The runs table from one row per run of ``spec_row`` facts (``specs``) and of log
    summaries (``summaries``, same order, ``SUMMARY_COLUMNS``), column-wise: the same
    numbers as ``runs_table(run_row(...) ...)`` without a Python loop per run."""
    if len(specs) != len(summaries):
        raise ValueError(f"{len(specs)} spec rows but {len(summaries)} summary rows")
    summ = summaries.reset_index(drop=True)
    out = specs.reset_index(drop=True).copy()
    exit_code = pd.to_numeric(out["exit_code"], errors="coerce")
    status = summ["status"].astype(object).to_numpy(copy=True)
    reason = summ["reason"].fillna("").astype(object).to_numpy(copy=True)
    bad_exit = (exit_code.notna() & (exit_code != 0)).to_numpy() & (status != "failed")
    status[bad_exit] = "failed"
    reason[bad_exit] = [f"exit_code_{int(c)}" for c in exit_code[bad_exit]]
    # An attempt killed from outside (scancel, time limit, node failure) carries the
    # scheduler's reason in its record; its partial log must not read as merely incomplete.
    killed = (
        out.pop("failure_reason").fillna("").astype(str).to_numpy()
        if ("failure_reason" in out.columns)
        else np.array([""] * len(out), dtype=object)
    )
    status[killed != ""] = "failed"
    reason[killed != ""] = killed[killed != ""]
    out["status"], out["reason"] = status, reason
    for col in SUMMARY_COLUMNS[2:]:
        out[col] = pd.to_numeric(summ[col], errors="coerce").to_numpy()
    out["logged_tflops_per_gpu_mean"] = out.pop("tflops_per_gpu_mean")
    step = out["step_time_mean_s"].astype(float)
    ok = step.gt(0) & step.lt(math.inf)
    step_ok = step.where(ok)
    tps = out["seq_len"] * out["global_batch_size"] / step_ok
    out["tokens_per_s"] = tps
    out["tokens_per_s_per_gpu"] = tps / out["gpus"]
    out["train_tokens"] = float(train_tokens)
    out["days_to_train"] = train_tokens / tps / metrics.SECONDS_PER_DAY
    achieved = out["global_batch_size"] * out["model_flops_per_sample"] / step_ok / out["gpus"]
    out["achieved_tflops_per_gpu"] = achieved / 1e12
    out["mfu"] = achieved / (out["peak_tflops_per_gpu"] * 1e12)
    out["started_at"] = pd.to_datetime(out["started_at"], utc=True, format="ISO8601")
    out["finished_at"] = pd.to_datetime(out["finished_at"], utc=True, format="ISO8601")
    out["duration_s"] = (out["finished_at"] - out["started_at"]).dt.total_seconds()
    return runs_table_frame(out)


def runs_table_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Give a frame with the runs columns the schema's order and types, sorted by keys."""
    for col in RUN_DTYPES:
        if col not in frame.columns:
            frame[col] = None
    frame = frame.loc[:, list(RUN_DTYPES)].astype(RUN_DTYPES)
    return frame.sort_values(
        ["workload", "size", "gpu_type", "scaling", "variant", "dtype", "gpus"],
        ignore_index=True,
    )


def steps_table_from_frame(specs: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """The steps table from ``spec_row`` facts and one long frame of parsed steps with a
    ``run_id`` column (iteration, step_time_s, loss, tflops_per_gpu), column-wise."""
    keys = specs.loc[:, ["run_id", "attempt", "workload", "size", "dtype", "gpu_type", "gpus",
                         "variant", "window_first", "window_last"]]  # fmt: skip
    idx = pd.Index(keys["run_id"].astype(str)).get_indexer(steps["run_id"].astype(str))
    if (idx < 0).any():
        missing = steps["run_id"][idx < 0].iloc[0]
        raise ValueError(f"steps for run {missing!r} have no spec row")
    out = {c: steps[c].to_numpy() for c in ("iteration", "step_time_s", "loss",
                                            "tflops_per_gpu")}  # fmt: skip
    for col in ("run_id", "attempt", "workload", "size", "dtype", "gpu_type", "gpus", "variant"):
        out[col] = keys[col].to_numpy()[idx]
    it = out["iteration"]
    out["in_window"] = (it >= keys["window_first"].to_numpy()[idx]) & (
        it <= keys["window_last"].to_numpy()[idx]
    )
    return pd.DataFrame(out)[list(STEP_DTYPES)].astype(STEP_DTYPES)
