"""The train rule's outputs beside the run record: the reported attempt's log summary
and parsed steps, its telemetry samples and window energy.

Apart from ``llmbench.job.attempts`` (which runs the attempts) because these need numpy,
pandas and pyarrow: the train job imports this module once its ranks have run, so the
job's time in its allocation before the ranks start (benchmarks/slurm_job_start.py) does
not include loading them. The log is parsed in the same job: one job per run keeps a
large sweep's DAG small.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmbench.core.devices import device
from llmbench.files.atomic import write_json_atomic
from llmbench.files.atomic_tables import write_parquet_atomic
from llmbench.job.run_record import TRANSPORT_FILE, attempt_transport, summarize_record
from llmbench.parsers.table import steps_table
from llmbench.telemetry.results import run_telemetry


def write_train_outputs(record: Mapping[str, Any], outputs: Mapping[str, str | Path]) -> None:
    """For the reported attempt's ``record`` (written to ``outputs["record"]``): its log
    summary and parsed steps (``outputs["summary"]``, ``outputs["steps"]``) and its
    telemetry samples and window energy (``outputs["telemetry"]``, ``outputs["energy"]``),
    each written atomically; beside them ``transport.json``, what NCCL's debug files say
    (not a rule output: runs recorded before it existed are not redone for it)."""
    record_path = Path(outputs["record"])
    summary, parsed = summarize_record(record_path)
    write_json_atomic(outputs["summary"], summary)
    write_parquet_atomic(steps_table(parsed), outputs["steps"])
    samples, energy = run_telemetry(
        record_path.parent, record, device(record["spec"]["gpu_type"]).nvidia_smi
    )
    write_parquet_atomic(samples, outputs["telemetry"])
    write_json_atomic(outputs["energy"], energy.as_dict())
    transport = attempt_transport(record_path.parent, record)
    write_json_atomic(
        record_path.parent / TRANSPORT_FILE, {"attempt": record["attempt"], **transport.as_dict()}
    )
