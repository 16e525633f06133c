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
        sweep=update(SWEEP.paths.sweep),
        runs=update(SWEEP.paths.runs_table),
        runs_csv=update(SWEEP.paths.runs_csv),
        steps=update(SWEEP.paths.steps_table),
        scaling_md=update(SWEEP.paths.scaling_md),
        overview_html=update(
            report(
                SWEEP.paths.page("overview"),
                caption="../report/overview.rst",
                category="Overview",
                labels=SWEEP.table_labels("overview"),
            )
        ),
        runs_html=update(
            report(
                SWEEP.paths.page("runs"),
                caption="../report/runs.rst",
                category="Runs",
                labels=SWEEP.table_labels("all runs"),
            )
        ),
        scaling_html=update(
            report(
                SWEEP.paths.page("scaling"),
                caption="../report/scaling_tables.rst",
                category="Scaling",
                subcategory="tables",
                labels=SWEEP.table_labels("scaling tables"),
            )
        ),
        references_html=update(
            report(
                SWEEP.paths.page("references"),
                caption="../report/references.rst",
                category="References",
                labels=SWEEP.table_labels("measured vs reference"),
            )
        ),
        failures_html=update(
            report(
                SWEEP.paths.page("failures"),
                caption="../report/failures.rst",
                category="Failures",
                labels=SWEEP.table_labels("failed runs"),
            )
        ),
        profiles_html=update(
            report(
                SWEEP.paths.page("profiles"),
                caption="../report/profiles.rst",
                category="Profiles",
                labels=SWEEP.table_labels("profiling runs"),
            )
        ),
        why_slower_html=update(
            report(
                SWEEP.paths.page("why_slower"),
                caption="../report/why_slower.rst",
                category="Why slower",
                labels=SWEEP.table_labels("why slower"),
            )
        ),
        # the sweep's stable machine-readable result (docs/results.md)
        result=update(SWEEP.paths.result),
    log:
        SWEEP.paths.log("aggregate"),
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
