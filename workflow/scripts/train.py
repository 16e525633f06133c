import sys
from pathlib import Path

from llmbench.attempts import run_or_salvage
from llmbench.runner import write_json_atomic
from llmbench.runspec import RunSpec

sys.stderr = open(snakemake.log[0], "w")
record_path = Path(snakemake.output.record)
record = run_or_salvage(
    RunSpec.from_dict(snakemake.params.spec),
    record_path.parent,
    job_attempt=snakemake.resources.llmbench_try,
    infra_retries=snakemake.params.infra_retries,
    source_dir=Path(snakemake.scriptdir),
    env=snakemake.params.env,
)
write_json_atomic(record_path, record)
