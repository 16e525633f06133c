import sys
from pathlib import Path

import pandas as pd

from llmbench.files.job_log import job_log
from llmbench.report.telemetry_plot import plot_group_telemetry

job_log(snakemake.log[0], list(snakemake.output))
wanted = list(snakemake.params.runs)
samples = pd.read_parquet(snakemake.input.samples)
samples = samples[samples["run_id"].isin(wanted)]
runs = pd.read_parquet(snakemake.input.runs)
runs = runs[runs["run_id"].isin(wanted)]
drawn = plot_group_telemetry(samples, runs, snakemake.wildcards.group, Path(snakemake.output.plot))
print(f"{drawn} runs drawn", file=sys.stderr)
