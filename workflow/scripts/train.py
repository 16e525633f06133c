import sys
from pathlib import Path

from llmbench.attempts import train_job

sys.stderr = open(snakemake.log[0], "w")
train_job(
    snakemake.params.run,
    dict(snakemake.output.items()),
    job_attempt=snakemake.resources.llmbench_try,
    infra_retries=snakemake.params.infra_retries,
    source_dir=Path(snakemake.scriptdir),
)
