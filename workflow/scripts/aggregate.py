import sys

import pandas as pd

from llmbench.aggregate import peak_for, run_row, runs_table, steps_table
from llmbench.records import read_record
from llmbench.report_tables import runs_html
from llmbench.tables_io import write_csv_atomic, write_parquet_atomic, write_text_atomic

sys.stderr = open(snakemake.log[0], "w")
cpu_peak = read_record(snakemake.input.cpu_peak) if "cpu_peak" in snakemake.input.keys() else None
records = [read_record(path) for path in snakemake.input.records]
summaries = [read_record(path) for path in snakemake.input.summaries]
runs = runs_table(
    run_row(rec, summ, peak_for(rec["spec"], cpu_peak), snakemake.params.train_tokens)
    for rec, summ in zip(records, summaries)
)
steps = steps_table(zip(records, map(pd.read_parquet, snakemake.input.steps)))
write_parquet_atomic(runs, snakemake.output.runs)
write_csv_atomic(runs, snakemake.output.runs_csv)
write_parquet_atomic(steps, snakemake.output.steps)
write_text_atomic(runs_html(runs), snakemake.output.runs_html)
