rule telemetry_table:
    input:
        # After the runs table, whose job lists every run.json: energy.json and
        # telemetry.parquet are outputs of the same train job as run.json, and a second
        # list of every run's file would cost a 10,000-run sweep's DAG as much as its
        # aggregate's (benchmarks/dry_run.py).
        sweep=SWEEP.paths.sweep,
    output:
        samples=SWEEP.paths.telemetry_table,
    log:
        SWEEP.paths.log("telemetry_table"),
    conda:
        "../../envs/llmbench.yaml"
    params:
        run_dirs=SWEEP.run_dirs,
    script:
        "../scripts/telemetry_table.py"


rule plot_telemetry:
    input:
        samples=SWEEP.paths.telemetry_table,
        runs=SWEEP.paths.runs_table,
    output:
        plot=report(
            SWEEP.paths.telemetry_plot,
            caption="../report/telemetry.rst",
            category="Telemetry",
            subcategory="{group}",
            labels=SWEEP.telemetry_plot_labels,
        ),
    log:
        SWEEP.paths.log("plot_telemetry/{group}"),
    conda:
        "../../envs/llmbench.yaml"
    params:
        runs=SWEEP.group_runs,
    script:
        "../scripts/plot_telemetry.py"
