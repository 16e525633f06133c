import sys

from llmbench.history.store import add_sweep_of_job

sys.stderr = open(snakemake.log[0], "w")
params = snakemake.params
line = add_sweep_of_job(params.history, snakemake.input.sweep, snakemake.output.added)
print(line, file=sys.stderr)
