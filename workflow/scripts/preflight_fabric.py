from pathlib import Path

from llmbench.core.preflight_settings import settings_from_dict
from llmbench.errors import exit_with_error
from llmbench.files.atomic import write_json_atomic
from llmbench.files.job_log import job_log
from llmbench.preflight.node import fabric_preflight

job_log(snakemake.log[0], list(snakemake.output))
output = Path(snakemake.output.result)
result = fabric_preflight(
    settings_from_dict(snakemake.params.settings),
    output.with_suffix(""),
    snakemake.params.image or None,
)
if result["problems"]:  # the largest run cannot run well here: stop before it starts
    exit_with_error(f"preflight: {'; '.join(result['problems'])}")
write_json_atomic(output, result)
