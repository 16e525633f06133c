from pathlib import Path

from llmbench.files.atomic_tables import write_parquet_atomic
from llmbench.files.job_log import job_log
from llmbench.telemetry.results import sweep_samples

job_log(snakemake.log[0], list(snakemake.output))
run_dirs = [Path(path) for path in snakemake.params.run_dirs]
write_parquet_atomic(sweep_samples(run_dirs), snakemake.output.samples)
