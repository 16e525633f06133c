from llmbench.core.preflight_settings import settings_from_dict
from llmbench.errors import LlmbenchError, exit_with_error
from llmbench.files.job_log import job_log
from llmbench.preflight.gate_job import write_gate

job_log(snakemake.log[0], list(snakemake.output))
try:
    settings = settings_from_dict(snakemake.params.settings)
    write_gate(snakemake.input.results, settings, snakemake.output)
except LlmbenchError as err:
    # One line in the log (stderr), no traceback: which nodes failed, how many are needed.
    exit_with_error(err)
