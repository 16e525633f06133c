import sys
from pathlib import Path

from llmbench.atomic_tables import write_parquet_atomic
from llmbench.telemetry.results import sweep_samples

sys.stderr = open(snakemake.log[0], "w")
run_dirs = [Path(path) for path in snakemake.params.run_dirs]
write_parquet_atomic(sweep_samples(run_dirs), snakemake.output.samples)
