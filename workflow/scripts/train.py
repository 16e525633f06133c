import sys
from pathlib import Path

from llmbench.runner import run_attempt, write_json_atomic
from llmbench.runspec import RunSpec

sys.stderr = open(snakemake.log[0], "w")
record_path = Path(snakemake.output.record)
record = run_attempt(
    RunSpec.from_dict(snakemake.params.spec),
    record_path.parent,
    Path(snakemake.scriptdir),
    env=snakemake.params.env,
)
write_json_atomic(record_path, record)
