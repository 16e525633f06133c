from llmbench.aggregate.reference import references_for
from llmbench.files.job_log import job_log
from llmbench.history.trends import write_sweep_trends

job_log(snakemake.log[0], list(snakemake.output))
write_sweep_trends(
    snakemake.params.history,
    snakemake.input.runs,
    snakemake.input.sweep,
    references_for(snakemake.input.get("reference")),  # an optional input
    snakemake.params.tolerance,
    snakemake.params.days,
    snakemake.output.plots,
)
