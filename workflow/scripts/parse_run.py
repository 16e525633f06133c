import sys
from pathlib import Path

from llmbench.records import parse_record
from llmbench.runner import write_json_atomic
from llmbench.tables_io import write_parquet_atomic

sys.stderr = open(snakemake.log[0], "w")
parsed = parse_record(snakemake.input.record)
write_json_atomic(Path(snakemake.output.summary), parsed.summary.as_dict())
write_parquet_atomic(parsed.steps, snakemake.output.steps)
