import sys
from pathlib import Path

from llmbench.plots import plot_group_files

sys.stderr = open(snakemake.log[0], "w")
inputs, group = snakemake.input, snakemake.wildcards.group
written = plot_group_files(
    inputs.runs, inputs.steps, snakemake.params.runs, group, Path(snakemake.output.plots)
)
print(f"{len(written)} files written: {', '.join(p.name for p in written)}", file=sys.stderr)
