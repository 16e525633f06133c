import sys

from llmbench.aggregate.reference import references_for
from llmbench.history.trends import write_sweep_trends

sys.stderr = open(snakemake.log[0], "w")
write_sweep_trends(
    snakemake.params.history,
    snakemake.input.runs,
    snakemake.input.sweep,
    references_for(snakemake.input.get("reference")),  # an optional input
    snakemake.params.tolerance,
    snakemake.params.days,
    snakemake.output.plots,
)
