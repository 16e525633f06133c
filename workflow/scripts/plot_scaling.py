import sys
from pathlib import Path

import pandas as pd

from llmbench.plots import plot_group

sys.stderr = open(snakemake.log[0], "w")
runs = pd.read_parquet(snakemake.input.runs)
steps = pd.read_parquet(snakemake.input.steps)
members = snakemake.params.runs
written = plot_group(
    runs[runs.run_id.isin(members)],
    steps[steps.run_id.isin(members)],
    snakemake.wildcards.group,
    Path(snakemake.output.plots),
)
print(f"{len(written)} files written: {', '.join(p.name for p in written)}", file=sys.stderr)
