import sys
from pathlib import Path

from llmbench.files.job_log import job_log
from llmbench.report.scaling_plots import plot_group_files

job_log(snakemake.log[0], list(snakemake.output))
inputs, group = snakemake.input, snakemake.wildcards.group
written = plot_group_files(
    inputs.runs, inputs.steps, snakemake.params.runs, group, Path(snakemake.output.plots)
)
print(f"{len(written)} files written: {', '.join(p.name for p in written)}", file=sys.stderr)
