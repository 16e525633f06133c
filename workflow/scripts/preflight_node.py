from pathlib import Path

from llmbench.core.preflight_settings import settings_from_dict
from llmbench.files.atomic import write_json_atomic
from llmbench.files.job_log import job_log
from llmbench.preflight.node import node_preflight

job_log(snakemake.log[0], list(snakemake.output))
output = Path(snakemake.output.result)
result = node_preflight(
    snakemake.wildcards.node,
    settings_from_dict(snakemake.params.settings),
    output.with_suffix(""),
    snakemake.params.image or None,
)
write_json_atomic(output, result)
