"""The kit's step 3: Megatron-Core's GPTModel trained through llmbench's entry point
(``llmbench.ranks.entrypoints.megatron_core``), run like every other run: its own run folder
with attempts, ``launch.sh``, the supervisor's limits, telemetry beside it and the same
parsed outputs (``run.json``, ``summary.json``, ``steps.parquet``, ``energy.json``), so
its rows join the embedded runs' in the same tables (``benchmarks.gpu_proof.tables``).

On the CPU (``gpu_type: cpu``) the entry point first checks what the framework can do
there: build the model, and try one training step. Where that step fails (Megatron-Core
0.16 places tensors on the current CUDA device in its forward), the step ends as
``built``, with the framework's error as the reason, and nothing is trained.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmbench.core import embedded_workload
from llmbench.core.devices import device
from llmbench.core.flops import ModelShape
from llmbench.core.limits import RunLimits
from llmbench.core.runspec import RunSpec, model_fields
from llmbench.files.atomic import write_json_atomic
from llmbench.job.attempts import SUMMARY_FILE, attempt_outcome
from llmbench.job.runner import RECORD_FILE, run_attempt
from llmbench.job.train_outputs import write_train_outputs
from llmbench.launch.entry import SPEC_FILE
from llmbench.telemetry.sampling import TelemetrySettings

WORKLOAD = "mcore-gpt"
FRAMEWORK = "megatron-core"
ENTRY_MODULE = "llmbench.ranks.entrypoints.megatron_core"
FRAMEWORK_FILE = "framework.json"
CHECK_FILE = "check.json"
CHECK_TIMEOUT_S = 120
SIZES: dict[str, tuple[ModelShape, int]] = {
    "tiny": (embedded_workload.SIZES["tiny"], embedded_workload.MICRO_BATCH_SIZE),
    "small": (
        ModelShape(
            layers=8, hidden=1024, ffn_hidden=2816, heads=16, query_groups=8, vocab=32000,
            seq_len=1024,
        ),
        8,
    ),
}  # fmt: skip
"""(shape, micro batch) per size: ``tiny`` is the embedded workload's (for CPUs), ``small``
a 160M-parameter Llama that keeps a GPU busy for a measurable step (about 7 TFLOP)."""


def framework_spec(
    size: str,
    dtype: str,
    gpu_type: str,
    steps: int,
    window: tuple[int, int],
    limits: RunLimits,
) -> RunSpec:
    """One run of the GPTModel on one GPU (or one CPU rank), launched locally."""
    shape, micro_batch = SIZES[size]
    return RunSpec(
        workload=WORKLOAD,
        framework=FRAMEWORK,
        size=size,
        dtype=dtype,
        gpu_type=gpu_type,
        gpus=1,
        nodes=1,
        gpus_per_node=1,
        variant="perf",
        scaling="weak",
        steps=steps,
        window=window,
        seq_len=shape.seq_len,
        micro_batch_size=micro_batch,
        global_batch_size=micro_batch,
        parallelism={"tp": 1, "pp": 1, "cp": 1, "dp": 1, "ga": 1},
        model=model_fields("llama", shape),
        limits=limits,
    )


def check_on_cpu(spec: RunSpec, folder: Path) -> dict[str, Any]:
    """The entry point's ``--check-only`` result; ``{"built": False, "error": ...}``
    where it fails (the framework not installed, the build raising)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SPEC_FILE).write_text(spec.to_json() + "\n")
    command = [sys.executable, "-m", ENTRY_MODULE, "--spec", SPEC_FILE, "--check-only", CHECK_FILE]
    with open(folder / "check.log", "w") as log:
        try:
            proc = subprocess.run(
                command, cwd=folder, stdout=log, stderr=subprocess.STDOUT, timeout=CHECK_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            return {"built": False, "error": f"check timed out after {CHECK_TIMEOUT_S} s"}
    if proc.returncode != 0 or not (folder / CHECK_FILE).exists():
        return {"built": False, "error": last_line(folder / "check.log")}
    return dict(json.loads((folder / CHECK_FILE).read_text()))


def last_line(path: Path) -> str:
    """The last non-blank line of a log (an exception's message), or a note that there
    is none."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
    except OSError as exc:
        return f"{path.name}: {exc.strerror}"
    lines = [line for line in lines if line]
    return lines[-1] if lines else f"{path.name} is empty"


def train_run(spec: RunSpec, results: Path, period_ms: int) -> dict[str, Any]:
    """Run one attempt as the train rule does, then write its parsed outputs."""
    run_dir = results / "runs" / spec.run_id
    record = run_attempt(
        spec, run_dir, Path(__file__).parent, telemetry=TelemetrySettings(period_ms=period_ms)
    )
    outputs = {
        "record": run_dir / RECORD_FILE,
        "summary": run_dir / SUMMARY_FILE,
        "steps": run_dir / "steps.parquet",
        "telemetry": run_dir / "telemetry.parquet",
        "energy": run_dir / "energy.json",
    }
    write_json_atomic(outputs["record"], record)
    write_train_outputs(record, outputs)
    status, reason = attempt_outcome(run_dir, record)
    return {"run_id": spec.run_id, "status": status, "reason": reason}


def run_framework(
    folder: Path,
    gpu_type: str,
    size: str,
    dtypes: Sequence[str],
    steps: int,
    window: tuple[int, int],
    period_ms: int,
    limits: RunLimits,
) -> dict[str, Any]:
    """Step 3 into ``folder`` (``framework.json``, ``check/``, ``results/runs/``); returns
    what it wrote to ``framework.json``: ``status`` ``trained``, ``built`` or
    ``failed``, with a reason where it is not ``trained``."""
    specs = [framework_spec(size, d, gpu_type, steps, window, limits) for d in dtypes]
    out: dict[str, Any] = {"framework": FRAMEWORK, "model": "GPTModel", "runs": []}
    if not device(gpu_type).has_gpus:
        out["check"] = check = check_on_cpu(specs[0], folder / "check")
        if not check.get("built"):
            out.update(status="failed", reason=f"model not built: {check.get('error')}")
        elif check.get("cpu_step") != "ok":
            out.update(status="built", reason=f"not trained on the CPU: {check.get('cpu_step')}")
    if "status" not in out:
        runs = [train_run(spec, folder / "results", period_ms) for spec in specs]
        failed = [f"{r['run_id']}: {r['status']} {r['reason']}".strip() for r in runs
                  if r["status"] != "success"]  # fmt: skip
        out.update(runs=runs, status="failed" if failed else "trained", reason="; ".join(failed))
    write_json_atomic(folder / FRAMEWORK_FILE, out)
    return out
