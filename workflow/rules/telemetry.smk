rule telemetry_table:
    input:
        # After the runs table, whose job lists every run.json: energy.json and
        # telemetry.parquet are outputs of the same train job as run.json, and a second
        # list of every run's file would cost a 10,000-run sweep's DAG as much as its
        # aggregate's (benchmarks/dry_run.py).
        sweep="results/tables/sweep.json",
    output:
        samples="results/tables/telemetry.parquet",
    log:
        "results/logs/telemetry_table.log",
    conda:
        "../../envs/llmbench.yaml"
    params:
        run_dirs=SWEEP.run_dirs,
    script:
        "../scripts/telemetry_table.py"


rule plot_telemetry:
    input:
        samples="results/tables/telemetry.parquet",
        runs="results/tables/runs.parquet",
    output:
        plot=report(
            "results/plots/telemetry/{group}.svg",
            caption="../report/telemetry.rst",
            category="Telemetry",
            subcategory="{group}",
            labels=SWEEP.telemetry_plot_labels,
        ),
    log:
        "results/logs/plot_telemetry/{group}.log",
    conda:
        "../../envs/llmbench.yaml"
    params:
        runs=SWEEP.group_runs,
    script:
        "../scripts/plot_telemetry.py"
