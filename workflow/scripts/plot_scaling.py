import sys
from pathlib import Path

import pandas as pd

from llmbench.plots import plot_scaling

sys.stderr = open(snakemake.log[0], "w")
runs = pd.read_parquet(snakemake.input.runs)
plot_scaling(
    runs[runs.run_id.isin(snakemake.params.runs)],
    snakemake.wildcards.group,
    Path(snakemake.output.step_time).parent,
)
