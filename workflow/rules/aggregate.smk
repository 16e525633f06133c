rule aggregate:
    input:
        unpack(SWEEP.peak_inputs),
        unpack(SWEEP.reference_input),
        unpack(SWEEP.aggregate_preflight_input),
        # summary.json and steps.parquet sit next to each run.json (outputs of the same
        # train job): listing them too would triple the DAG's edges for nothing.
        records=SWEEP.run_records,
    # update(): Snakemake keeps the sweep's previous tables while the job runs, and puts
    # them back when it fails (a refused result.json leaves them as they were)
    output:
        sweep=update("results/tables/sweep.json"),
        runs=update("results/tables/runs.parquet"),
        runs_csv=update("results/tables/runs.csv"),
        steps=update("results/tables/steps.parquet"),
        scaling_md=update("results/tables/scaling.md"),
        overview_html=update(
            report(
                "results/tables/overview.html",
                caption="../report/overview.rst",
                category="Overview",
                labels=SWEEP.table_labels("overview"),
            )
        ),
        runs_html=update(
            report(
                "results/tables/runs.html",
                caption="../report/runs.rst",
                category="Runs",
                labels=SWEEP.table_labels("all runs"),
            )
        ),
        scaling_html=update(
            report(
                "results/tables/scaling.html",
                caption="../report/scaling_tables.rst",
                category="Scaling",
                subcategory="tables",
                labels=SWEEP.table_labels("scaling tables"),
            )
        ),
        references_html=update(
            report(
                "results/tables/references.html",
                caption="../report/references.rst",
                category="References",
                labels=SWEEP.table_labels("measured vs reference"),
            )
        ),
        failures_html=update(
            report(
                "results/tables/failures.html",
                caption="../report/failures.rst",
                category="Failures",
                labels=SWEEP.table_labels("failed runs"),
            )
        ),
        profiles_html=update(
            report(
                "results/tables/profiles.html",
                caption="../report/profiles.rst",
                category="Profiles",
                labels=SWEEP.table_labels("profiling runs"),
            )
        ),
        why_slower_html=update(
            report(
                "results/tables/why_slower.html",
                caption="../report/why_slower.rst",
                category="Why slower",
                labels=SWEEP.table_labels("why slower"),
            )
        ),
        # the sweep's stable machine-readable result (docs/results.md)
        result=update("results/result.json"),
    log:
        "results/logs/aggregate.log",
    conda:
        "../../envs/llmbench.yaml"
    # the steps table and its Parquet are built on a second thread (llmbench.aggregate.job)
    threads: 2
    params:
        train_tokens=SWEEP.config["total_tokens"],
        tolerance=SWEEP.reference_tolerance,
        config_sha256=SWEEP.config_sha256,
        cluster=SWEEP.history["cluster"],
        stage=SWEEP.stage,
        fabric=SWEEP.config.get("fabric"),
    script:
        "../scripts/aggregate.py"
