"""The kit's step 4: one summary of everything under the output folder, as JSON
(``summary.json``) and text (``summary.txt``, printed last by ``run.sh``).

Per run: status, tokens/s, step time, achieved TFLOP/s, the peak it is measured against
(the GPU's dense datasheet figure for ``local-cuda`` runs,
``llmbench.report.cuda_summary``; the measured GEMM peak for CPU runs), MFU and joules
per token (NaN with its reason where no energy source was readable). Per step: ok, failed
or timed out, with the last line of its log as the reason. A run whose figures cannot be
true (a step time that is not positive, MFU above 100 %) is ``implausible``, never a
success.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.gpu_proof.framework import FRAMEWORK_FILE, last_line
from benchmarks.gpu_proof.node import NODE_FILE
from benchmarks.gpu_proof.tables import FRAMEWORK_RESULTS, TABLES, WORKFLOW_RESULTS
from llmbench.core.devices import datasheet_peak, device
from llmbench.files.atomic import write_json_atomic, write_text_atomic

STEPS_DIR = "steps"
SUMMARY_JSON = "summary.json"
SUMMARY_TEXT = "summary.txt"
ENVIRONMENT_FILE = "environment.json"
TIMED_OUT_CODES = (124, 137)
"""``timeout``'s exit codes: the limit was reached (124), or it had to kill (137)."""
ERROR_LINE = re.compile(r"^[\w.]*(?:Error|Exception): \S.*")
"""A Python exception's last traceback line, with its message."""


def first_error(outdir: Path, log_path: str) -> str:
    """The first exception message in a run's log (the root cause: torchrun's own error
    comes after its child's), or ``""``. ``log_path`` is relative to ``results/runs``."""
    for results in (WORKFLOW_RESULTS, FRAMEWORK_RESULTS):
        log = outdir / results / "runs" / log_path
        if log.is_file():
            with open(log, errors="replace") as fh:
                return next((line.strip() for line in fh if ERROR_LINE.match(line)), "")
    return ""


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def step_results(outdir: Path) -> list[dict[str, Any]]:
    """The steps ``run.sh`` recorded (``steps/<n>-<name>.json``), in order, each with
    ``status`` ok, failed or timed out, and a ``reason`` where it is not ok."""
    steps = []
    for path in sorted((outdir / STEPS_DIR).glob("*.json")):
        step = _read_json(path) or {"step": path.stem, "rc": None}
        rc = step.get("rc")
        if rc == 0:
            step.update(status="ok", reason="")
        elif rc in TIMED_OUT_CODES:
            step.update(status="timed out", reason=f"stopped after {step.get('timeout_s')} s")
        else:
            log = outdir / str(step.get("log", ""))
            step.update(status="failed", reason=last_line(log) if log.is_file() else "no log")
        steps.append(step)
    return steps


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and value is not None else math.nan


def run_rows(runs: pd.DataFrame, gpu_name: str, outdir: Path | None = None) -> list[dict[str, Any]]:
    """One summary row per run of the runs table (see the module docstring); a run that
    failed also gets the first exception of its log from ``outdir``."""
    rows = []
    for run in runs.to_dict("records"):
        achieved = _number(run.get("achieved_tflops_per_gpu"))
        if device(run["gpu_type"]).peak == "node-datasheet":
            peak, source = datasheet_peak(gpu_name, run["dtype"])
        else:
            peak, source = _number(run.get("peak_tflops_per_gpu")), str(run.get("peak_source"))
        mfu = achieved / peak if peak and not math.isnan(peak) else math.nan
        step_s = _number(run.get("step_time_mean_s"))
        status, reason = str(run["status"]), str(run.get("reason") or "")
        if status == "success" and not (math.isfinite(step_s) and step_s > 0):
            status, reason = "implausible", f"step time {step_s!r} s is not a positive number"
        elif status == "success" and mfu > 1:
            status, reason = "implausible", f"MFU {mfu:.1%} is above 100 %"
        rows.append(
            {
                "run_id": run["run_id"],
                "framework": run["framework"],
                "dtype": run["dtype"],
                "gpu_type": run["gpu_type"],
                "status": status,
                "reason": reason,
                "tokens_per_s": _number(run.get("tokens_per_s")),
                "step_time_s": step_s,
                "tflops_per_gpu": achieved,
                "peak_tflops_per_gpu": peak,
                "peak_source": source,
                "mfu": mfu,
                "joules_per_token": _number(run.get("joules_per_token")),
                "energy_reason": str(run.get("energy_reason") or ""),
                "error": first_error(outdir, str(run.get("log_path")))
                if outdir is not None and status != "success"
                else "",
            }
        )
    return rows


def gpu_identity(outdir: Path) -> tuple[str, str]:
    """(GPU name, driver version) from the environment step's nvidia-smi query, else
    ``("", "")``."""
    lines = (_read_json(outdir / ENVIRONMENT_FILE) or {}).get("nvidia_smi") or []
    if not lines:
        return "", ""
    cells = [c.strip() for c in str(lines[0]).split(",")]
    return cells[0], cells[1] if len(cells) > 1 else ""


def _runs_table(outdir: Path) -> tuple[pd.DataFrame | None, str]:
    for path in (
        outdir / TABLES / "runs.parquet",
        outdir / WORKFLOW_RESULTS / "tables/runs.parquet",
    ):
        if path.exists():
            return pd.read_parquet(path), str(path.relative_to(outdir))
    return None, ""


def build_summary(outdir: Path) -> dict[str, Any]:
    """Everything the kit found under ``outdir``, and ``ok``: every step ok and every run
    a success."""
    gpu, driver = gpu_identity(outdir)
    runs, runs_file = _runs_table(outdir)
    rows = run_rows(runs, gpu, outdir) if runs is not None else []
    steps = step_results(outdir)
    environment = _read_json(outdir / ENVIRONMENT_FILE) or {}
    summary = {
        "gpu": gpu,
        "driver": driver,
        "gpus": len(environment.get("nvidia_smi") or []),
        "host": environment.get("host", ""),
        "torch": (environment.get("torch") or {}).get("version", ""),
        "cuda": (environment.get("torch") or {}).get("cuda_build", ""),
        "steps": steps,
        "runs_table": runs_file,
        "runs": rows,
        "node": _read_json(outdir / "preflight" / NODE_FILE),
        "framework": _read_json(outdir / "framework" / FRAMEWORK_FILE),
    }
    summary["ok"] = (
        bool(steps)
        and all(s["status"] == "ok" for s in steps)
        and bool(rows)
        and all(r["status"] == "success" for r in rows)
    )
    return summary


def _fmt(value: float, spec: str) -> str:
    return "-" if value is None or math.isnan(value) else format(value, spec)


def render(summary: dict[str, Any]) -> str:
    """``summary.txt``: the lines a person reads first."""
    gpu = summary["gpu"] or "no NVIDIA GPU"
    lines = [
        f"llmbench GPU proof on {summary['host'] or '?'}: {gpu}"
        + (f" x {summary['gpus']}, driver {summary['driver']}" if summary["gpus"] else "")
        + f", torch {summary['torch'] or '?'} (CUDA {summary['cuda'] or 'none'})",
        "",
        "steps:",
    ]
    for step in summary["steps"]:
        seconds = step.get("seconds")
        took = f"{seconds:>4} s" if isinstance(seconds, int) else "     "
        reason = f"  {step['reason']}" if step["reason"] else ""
        lines.append(f"  {step.get('step', '?'):<12} {step['status']:<9} {took}{reason}")
    lines += ["", f"runs ({summary['runs_table'] or 'no runs table'}):"]
    header = "  {:<38} {:<13} {:<5} {:<11} {:>10} {:>9} {:>8} {:>8} {:>7} {:>9}"
    lines.append(
        header.format(
            "run", "framework", "dtype", "status", "tokens/s", "step s", "TFLOP/s", "peak",
            "MFU %", "J/token",
        )
    )  # fmt: skip
    for r in summary["runs"]:
        lines.append(
            header.format(
                r["run_id"], r["framework"], r["dtype"], r["status"],
                _fmt(r["tokens_per_s"], ".4g"), _fmt(r["step_time_s"], ".4g"),
                _fmt(r["tflops_per_gpu"], ".4g"), _fmt(r["peak_tflops_per_gpu"], ".4g"),
                _fmt(100 * r["mfu"], ".3g"), _fmt(r["joules_per_token"], ".3g"),
            )
        )  # fmt: skip
        energy = r["energy_reason"] and f"energy: {r['energy_reason']}"
        for why in (r["reason"], r["error"], energy):
            if why:
                lines.append(f"      {why}")
    lines += ["", *_node_lines(summary["node"]), *_framework_lines(summary["framework"])]
    lines += ["", "PASS" if summary["ok"] else "FAIL: see the steps and runs above"]
    return "\n".join(lines) + "\n"


def _node_lines(node: dict[str, Any] | None) -> list[str]:
    if node is None:
        return ["node checks: no result"]
    lines = [f"node checks: {node['status']} ({', '.join(node.get('checks', []))})"]
    if node.get("busbw_gbps") is not None:
        size = node.get("max_message_bytes") or 0
        lines.append(
            f"  all-reduce bus bandwidth {node['busbw_gbps']:.3g} GB/s over "
            f"{node.get('ranks')} ranks at {size / 2**20:.3g} MiB"
        )
    if node.get("busbw_note"):
        algbw = node.get("algbw_gbps")
        lines.append(f"  {node['busbw_note']}" + (f" (algbw {algbw:.3g} GB/s)" if algbw else ""))
    for gpu in node.get("gpus") or []:
        lines.append(
            f"  GPU {gpu['index']} ({gpu['name']}): SM clock {gpu['sm_clock']} of "
            f"{gpu['max_sm_clock']} (idle GPUs clock down)"
        )
    lines += [f"  problem: {p}" for p in node.get("problems", [])]
    lines += [f"  skipped: {s}" for s in node.get("skipped", [])]
    return lines


def _framework_lines(framework: dict[str, Any] | None) -> list[str]:
    if framework is None:
        return ["framework step: no result"]
    check = framework.get("check") or {}
    line = f"framework step: {framework['framework']} {framework['model']}: {framework['status']}"
    if check.get("built"):
        line += (
            f" ({check['version']}, {check['parameters']:,} parameters, "
            f"formula {check['expected_parameters']:,})"
        )
    lines = [line]
    if framework.get("reason"):
        lines.append(f"  {framework['reason']}")
    return lines


def write_summary(outdir: Path) -> dict[str, Any]:
    """Write ``summary.json`` and ``summary.txt`` into ``outdir``; returns the summary."""
    summary = build_summary(outdir)
    write_json_atomic(outdir / SUMMARY_JSON, summary)
    write_text_atomic(render(summary), outdir / SUMMARY_TEXT)
    return summary
