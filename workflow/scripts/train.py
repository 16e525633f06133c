"""The train rule: run the attempt(s) and write the run record, then the outputs parsed
from it. Their module needs numpy, pandas and pyarrow, so it is imported only after the
ranks have run: the job's time before its ranks start does not include loading them
(benchmarks/slurm_job_start.py)."""

import sys
from pathlib import Path

from llmbench.files.job_log import job_log
from llmbench.job.attempts import WorkflowLostError, train_job

job_log(snakemake.log[0], list(snakemake.output))
try:
    record = train_job(
        snakemake.params.run,
        snakemake.output.record,
        job_attempt=snakemake.resources.llmbench_try,
        infra_retries=snakemake.params.infra_retries,
        source_dir=Path(snakemake.scriptdir),
    )
except WorkflowLostError as lost:
    sys.exit(f"llmbench: {lost}")  # one line in the job's log: nobody waits for the rest

from llmbench.job.train_outputs import write_train_outputs  # noqa: E402  (see the docstring)

write_train_outputs(record, dict(snakemake.output.items()))
