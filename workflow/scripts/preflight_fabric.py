from pathlib import Path

from llmbench.core.preflight_settings import settings_from_dict
from llmbench.errors import LlmbenchError, exit_with_error
from llmbench.files.job_log import job_log
from llmbench.preflight.node import fabric_job

job_log(snakemake.log[0], list(snakemake.output))
try:
    fabric_job(
        settings_from_dict(snakemake.params.settings),
        Path(snakemake.output.result),
        snakemake.params.image or None,
    )
except LlmbenchError as err:
    # One line, no traceback: the fabric's problems; the largest run would not run well.
    exit_with_error(err)
