import sys

from llmbench.history.trends import write_sweep_trends
from llmbench.reference import references_for

sys.stderr = open(snakemake.log[0], "w")
inputs = snakemake.input
params = snakemake.params
named = set(inputs.keys())  # the reference file is an optional input
write_sweep_trends(
    params.history,
    inputs.runs,
    inputs.sweep,
    references_for(inputs.reference if "reference" in named else None),
    params.tolerance,
    params.days,
    snakemake.output.plots,
)
