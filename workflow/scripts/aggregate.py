import sys
from pathlib import Path

from llmbench.history.sweep import stamp_sweep
from llmbench.tables import aggregate_sweep

sys.stderr = open(snakemake.log[0], "w")
params = snakemake.params
aggregate_sweep(
    dict(snakemake.input.items()),
    dict(snakemake.output.items()),
    stamp_sweep(params.config_sha256, params.cluster, params.stage, Path(snakemake.scriptdir)),
    params.train_tokens,
    params.tolerance,
)
