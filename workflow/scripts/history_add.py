import sys

from llmbench.files.job_log import job_log
from llmbench.history.store import add_sweep_of_job

job_log(snakemake.log[0], list(snakemake.output))
params = snakemake.params
line = add_sweep_of_job(params.history, snakemake.input.sweep, snakemake.output.added)
print(line, file=sys.stderr)
