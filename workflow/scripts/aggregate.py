import sys
from pathlib import Path

import pandas as pd

from llmbench.aggregate import (
    attempt_nodelist,
    peak_for,
    runs_table_from_frames,
    spec_row,
    steps_table_from_frame,
)
from llmbench.attempts import attempt_history
from llmbench.history.sweep import stamp_sweep
from llmbench.records import read_record
from llmbench.reference import compare, references_for
from llmbench.report_tables import (
    failures_html,
    overview_html,
    profiles_html,
    references_html,
    runs_html,
)
from llmbench.runner import write_json_atomic
from llmbench.scaling_tables import scaling_html, scaling_markdown
from llmbench.tables_io import write_csv_atomic, write_parquet_atomic, write_text_atomic
from llmbench.telemetry.run import read_energy

sys.stderr = open(snakemake.log[0], "w")
inputs = snakemake.input
params = snakemake.params
# This invocation builds the tables: it is a sweep of its own (docs/history.md).
sweep = stamp_sweep(
    params.config_sha256, params.cluster, params.stage, source_dir=Path(snakemake.scriptdir)
)
named = set(inputs.keys())  # optional inputs (unpacked from input functions)
cpu_peak = read_record(inputs.cpu_peak) if "cpu_peak" in named else None
records = [read_record(path) for path in inputs.records]
specs = pd.DataFrame(
    [
        spec_row(
            rec,
            peak_for(rec["spec"], cpu_peak),
            attempt_history(Path(path).parent),
            attempt_nodelist(Path(path).parent, rec),
        )
        for rec, path in zip(records, inputs.records, strict=True)
    ]
).assign(sweep_id=sweep["sweep_id"])
run_dirs = [Path(path).parent for path in inputs.records]
summaries = pd.DataFrame([read_record(run_dir / "summary.json") for run_dir in run_dirs])
energy = pd.DataFrame([read_energy(run_dir) for run_dir in run_dirs])
references = references_for(inputs.reference if "reference" in named else None)
tolerance = snakemake.params.tolerance
runs = compare(
    runs_table_from_frames(specs, summaries, snakemake.params.train_tokens, energy),
    references,
    tolerance,
)
steps_long = pd.concat(
    [
        pd.read_parquet(run_dir / "steps.parquet").assign(run_id=rec["run_id"])
        for rec, run_dir in zip(records, run_dirs, strict=True)
    ],
    ignore_index=True,
)
steps = steps_table_from_frame(specs, steps_long)
write_json_atomic(Path(snakemake.output.sweep), sweep)
write_parquet_atomic(runs, snakemake.output.runs)
write_csv_atomic(runs, snakemake.output.runs_csv)
write_parquet_atomic(steps, snakemake.output.steps)
write_text_atomic(overview_html(runs), snakemake.output.overview_html)
write_text_atomic(runs_html(runs), snakemake.output.runs_html)
write_text_atomic(scaling_markdown(runs), snakemake.output.scaling_md)
write_text_atomic(scaling_html(runs), snakemake.output.scaling_html)
write_text_atomic(references_html(runs, tolerance), snakemake.output.references_html)
write_text_atomic(failures_html(runs), snakemake.output.failures_html)
write_text_atomic(profiles_html(runs), snakemake.output.profiles_html)
