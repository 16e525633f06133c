import sys
from pathlib import Path

from llmbench.atomic import write_json_atomic
from llmbench.preflight.node import node_preflight
from llmbench.preflight.settings import settings_from_dict

sys.stderr = open(snakemake.log[0], "w")
output = Path(snakemake.output.result)
result = node_preflight(
    snakemake.wildcards.node,
    settings_from_dict(snakemake.params.settings),
    output.with_suffix(""),
    snakemake.params.image or None,
)
write_json_atomic(output, result)
