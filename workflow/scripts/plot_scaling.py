import sys
from pathlib import Path

from llmbench.plots import plot_group, read_group

sys.stderr = open(snakemake.log[0], "w")
runs, steps = read_group(snakemake.input.runs, snakemake.input.steps, snakemake.params.runs)
written = plot_group(runs, steps, snakemake.wildcards.group, Path(snakemake.output.plots))
print(f"{len(written)} files written: {', '.join(p.name for p in written)}", file=sys.stderr)
