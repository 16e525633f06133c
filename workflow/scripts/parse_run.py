import sys
from pathlib import Path

from llmbench.records import summarize_record
from llmbench.runner import write_json_atomic
from llmbench.tables_io import write_parquet_atomic

sys.stderr = open(snakemake.log[0], "w")
summary, parsed = summarize_record(snakemake.input.record)
write_json_atomic(Path(snakemake.output.summary), summary)
write_parquet_atomic(parsed.steps, snakemake.output.steps)
