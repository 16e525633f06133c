from pathlib import Path

from llmbench.aggregate.job import aggregate_sweep
from llmbench.errors import LlmbenchError, exit_with_error
from llmbench.files.job_log import job_log
from llmbench.history.sweep import stamp_sweep

job_log(snakemake.log[0], list(snakemake.output))
params = snakemake.params
try:
    aggregate_sweep(
        dict(snakemake.input.items()),
        dict(snakemake.output.items()),
        stamp_sweep(params.config_sha256, params.cluster, params.stage, Path(snakemake.scriptdir)),
        params.train_tokens,
        params.tolerance,
        params.fabric,
    )
except LlmbenchError as err:
    # One line, no traceback: a run record that makes result.json refuse its schema.
    exit_with_error(err)
