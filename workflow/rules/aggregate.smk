rule aggregate:
    input:
        unpack(get_peak_inputs),
        records=run_files("run.json"),
        summaries=run_files("summary.json"),
        steps=run_files("steps.parquet"),
    output:
        runs="results/tables/runs.parquet",
        runs_csv="results/tables/runs.csv",
        steps="results/tables/steps.parquet",
        runs_html=report(
            "results/tables/runs.html",
            caption="../report/runs.rst",
            category="Runs",
            labels={"table": "all runs"},
        ),
    log:
        "results/logs/aggregate.log",
    conda:
        "../../envs/llmbench.yaml"
    params:
        train_tokens=CONFIG["total_tokens"],
    script:
        "../scripts/aggregate.py"
