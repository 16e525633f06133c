import sys
from pathlib import Path

from llmbench.files.job_log import job_log
from llmbench.report.telemetry_plot import plot_group_telemetry_files

job_log(snakemake.log[0], list(snakemake.output))
inputs = snakemake.input
drawn = plot_group_telemetry_files(
    Path(inputs.samples),
    Path(inputs.runs),
    snakemake.params.runs,
    snakemake.wildcards.group,
    Path(snakemake.output.plot),
)
print(f"{drawn} runs drawn", file=sys.stderr)
