import sys
from pathlib import Path

from llmbench.attempts import run_or_salvage
from llmbench.records import summarize_record
from llmbench.runner import write_json_atomic
from llmbench.runspec import RunSpec
from llmbench.tables_io import write_parquet_atomic
from llmbench.telemetry.run import TelemetrySettings, run_telemetry

sys.stderr = open(snakemake.log[0], "w")
output = snakemake.output
record = run_or_salvage(
    RunSpec.from_dict(snakemake.params.run["spec"]),
    Path(output.record).parent,
    job_attempt=snakemake.resources.llmbench_try,
    infra_retries=snakemake.params.infra_retries,
    source_dir=Path(snakemake.scriptdir),
    env=snakemake.params.run["env"],
    telemetry=TelemetrySettings.from_config(snakemake.params.run["telemetry"]),
)
write_json_atomic(Path(output.record), record)
summary, parsed = summarize_record(output.record)
write_json_atomic(Path(output.summary), summary)
write_parquet_atomic(parsed.steps, output.steps)
samples, energy = run_telemetry(Path(output.record).parent, record)
write_parquet_atomic(samples, output.telemetry)
write_json_atomic(Path(output.energy), energy.as_dict())
