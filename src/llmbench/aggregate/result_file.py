"""The sweep's stable, machine-readable result: ``results/result.json`` (docs/results.md),
checked against its versioned JSON Schema (``core/schemas/result.schema.json``), and the
run record ``results/runs/<run>/run.json`` against ``core/schemas/run.schema.json``.

Names: ``results/runs/<run>/summary.json`` is the parsed log of one run (an internal
file of the train job) and ``run.json`` its attempt record; ``result.json`` is the one
file a CI job reads: every run's keys, status, numbers with their units in their names,
reference verdict, transport, explanation and provenance, and where the files are.

A schema change bumps its ``x-version`` (and the documents' ``schema_version``);
tests/aggregate/test_result_schema.py pins each schema's hash to its version.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import pandas as pd

from llmbench.aggregate.explanation import EXPLAINED_VERDICTS, Explanation
from llmbench.core import run_folder
from llmbench.core.results_layout import (
    RESULT,
    RUNS,
    RUNS_CSV,
    RUNS_TABLE,
    STEPS_TABLE,
    SWEEP,
    page,
    run_file,
)
from llmbench.errors import ConfigError
from llmbench.files.regular_file import read_regular, why_unreadable

RESULT_FILE = RESULT
SCHEMAS = {"result": "result.schema.json", "run": "run.schema.json"}

KEYS = ("run_id", "workload", "size", "dtype", "gpu_type", "gpus", "nodes", "scaling",
        "variant", "attempt", "attempts", "release", "precision", "model")  # fmt: skip
METRICS = (
    "step_time_mean_s", "step_time_std_s", "step_time_last_s", "n_iterations", "tokens_per_s",
    "tokens_per_s_per_gpu", "achieved_tflops_per_gpu", "peak_tflops_per_gpu", "mfu",
    "bf16_peak_tflops_per_gpu", "mfu_bf16", "logged_tflops_per_gpu_mean",
    "days_to_train", "energy_per_step_j", "joules_per_token", "mean_power_w_per_gpu",
    "sm_clock_min_mhz",
)  # fmt: skip
CONFIGURATION = ("framework", "seq_len", "micro_batch_size", "global_batch_size", "tp", "pp",
                 "cp", "dp", "ga", "steps", "window_first", "window_last")  # fmt: skip
REFERENCE = {"reference_step_time_s": "step_time_s", "reference_source": "source",
             "deviation_pct": "deviation_pct", "verdict": "verdict",
             "verdict_reason": "verdict_reason", "verdict_basis": "basis",
             "verdict_note": "note", "reference_tokens_per_s_per_gpu": "tokens_per_s_per_gpu",
             "reference_gbs": "gbs", "reference_gpus": "gpus",
             "reference_container": "container"}  # fmt: skip
TRANSPORT = ("net_transport", "gdr", "nvls", "collnet", "nccl_plugin", "nccl_version",
             "socket_fallback")  # fmt: skip
PROVENANCE = ("started_at", "finished_at", "duration_s", "host", "nodelist", "image", "git_sha",
              "llmbench_version", "python_version", "torch_version", "slurm_job_id",
              "cluster_type", "workload_id")  # fmt: skip
TABLE_FILES = {"runs_table": RUNS_TABLE, "runs_csv": RUNS_CSV, "steps_table": STEPS_TABLE,
               "sweep": SWEEP, "why_slower": page("why_slower")}  # fmt: skip


@cache
def schema(name: str) -> dict[str, Any]:
    """One of ``SCHEMAS``, from the package (an installed llmbench has no checkout)."""
    text = resources.files("llmbench.core").joinpath(f"schemas/{SCHEMAS[name]}").read_text()
    return json.loads(text)


def schema_version(name: str) -> str:
    return str(schema(name)["x-version"])


def validate(document: Any, name: str, where: str = "") -> None:
    """Raise ``ConfigError`` (one line: the file, the field, what is wrong) unless
    ``document`` fits schema ``name``."""
    validator = jsonschema.Draft202012Validator(schema(name))
    error = next(iter(sorted(validator.iter_errors(document), key=lambda e: list(e.path))), None)
    if error is not None:
        field = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ConfigError(f"{where or name}: {field}: {error.message}{_whose(document, error)}")


MAX_RESULT_BYTES = 1 << 30
"""A result.json is about 3 KB per run; a larger file is not one."""


def check_result_bytes(data: bytes, where: str) -> None:
    """``ConfigError`` (one line naming ``where``) unless ``data`` is a ``result.json``
    this llmbench reads: JSON, its schema's version, valid against it."""
    try:
        document = json.loads(data)
    except ValueError as err:
        raise ConfigError(
            f"{where}: not JSON, truncated or damaged ({str(err)[:80]}); allowed: the "
            "result.json the aggregate step wrote (run it again to rebuild it)"
        ) from None
    version = document.get("schema_version") if isinstance(document, dict) else None
    ours = _version_tuple(schema_version("result"))
    theirs = _version_tuple(version) if isinstance(version, str) else None
    if isinstance(document, dict) and (theirs is None or theirs > ours):
        raise ConfigError(
            f"{where}: schema_version {version!r}; allowed: {schema_version('result')} or "
            "older (the result schemas this llmbench knows)"
        )
    if theirs is None or theirs == ours:  # an older one was checked by its own writer
        validate(document, "result", where)


def result_file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is not a result.json this llmbench reads (one line naming it); None
    when it is one, or when there is none (an older llmbench wrote no result.json)."""
    try:
        check_result_bytes(read_regular(path, MAX_RESULT_BYTES), str(path))
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"{path}: cannot read ({why_unreadable(err)})"
    except ConfigError as err:
        return str(err)
    return None


def _version_tuple(text: str) -> tuple[int, ...] | None:
    parts = text.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def _whose(document: Any, error: jsonschema.ValidationError) -> str:
    """For a field of one run of ``result.json``: which run, and the record it came from."""
    path = list(error.absolute_path)
    if len(path) < 2 or path[0] != "runs" or not isinstance(path[1], int):
        return ""
    try:
        run = document["runs"][path[1]]["run_id"]
    except (KeyError, IndexError, TypeError):
        return ""
    return f" (run {run}, from {run_file(run, run_folder.RECORD)})"


def _plain(value: Any) -> Any:
    """A table value as JSON: NaN, NA and NaT as null, timestamps as ISO 8601, numpy
    scalars as Python ones."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def run_entry(row: Mapping[str, Any], explanation: Explanation | None) -> dict[str, Any]:
    """One run of ``result.json`` from its runs-table row."""
    pick = lambda names: {n: _plain(row.get(n)) for n in names}  # noqa: E731
    return {
        **pick(KEYS),
        "status": _plain(row.get("status")),
        "reason": _plain(row.get("reason")) or "",
        "configuration": pick(CONFIGURATION),
        "metrics": pick(METRICS),
        "reference": {new: _plain(row.get(old)) for old, new in REFERENCE.items()},
        "transport": {**pick(TRANSPORT), "socket_fallback": bool(row.get("socket_fallback"))},
        "explanation": explanation.as_dict() if explanation is not None else None,
        "provenance": pick(PROVENANCE),
        "files": {
            "record": run_file(str(row["run_id"]), run_folder.RECORD),
            "summary": run_file(str(row["run_id"]), run_folder.SUMMARY),
            "log": f"{RUNS}/{row['log_path']}",
        },
    }


def sweep_status(statuses: Sequence[str]) -> str:
    """``success`` (every run), ``partial``, ``failed`` (none) or ``empty``."""
    if not statuses:
        return "empty"
    ok = sum(1 for s in statuses if s == "success")
    return "success" if ok == len(statuses) else ("failed" if ok == 0 else "partial")


def result_document(
    runs: pd.DataFrame, sweep: Mapping[str, Any], explanations: Iterable[Explanation]
) -> dict[str, Any]:
    """``result.json`` of a sweep: its record, counts and one entry per run."""
    by_run = {e.run_id: e for e in explanations}
    rows = runs.to_dict("records")
    statuses = [str(r["status"]) for r in rows]
    verdicts = [_plain(r.get("verdict")) for r in rows]
    return {
        "schema": "llmbench-result",
        "schema_version": schema_version("result"),
        "created_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        "sweep": {k: _plain(v) for k, v in sweep.items()},
        "status": sweep_status(statuses),
        "counts": {
            "runs": len(rows),
            "status": {s: statuses.count(s) for s in sorted(set(statuses))},
            "verdict": {str(v): verdicts.count(v) for v in sorted(set(verdicts), key=str)},
            "socket_fallback": sum(1 for r in rows if bool(r.get("socket_fallback"))),
            "explained": sum(1 for r in rows if _plain(r.get("verdict")) in EXPLAINED_VERDICTS),
        },
        "files": dict(TABLE_FILES),
        "runs": [run_entry(r, by_run.get(str(r["run_id"]))) for r in rows],
    }
