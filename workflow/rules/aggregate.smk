rule aggregate:
    input:
        unpack(get_peak_inputs),
        unpack(get_reference_input),
        unpack(get_aggregate_preflight_input),
        # summary.json and steps.parquet sit next to each run.json (outputs of the same
        # train job): listing them too would triple the DAG's edges for nothing.
        records=get_run_records,
    output:
        sweep="results/tables/sweep.json",
        runs="results/tables/runs.parquet",
        runs_csv="results/tables/runs.csv",
        steps="results/tables/steps.parquet",
        scaling_md="results/tables/scaling.md",
        overview_html=report(
            "results/tables/overview.html",
            caption="../report/overview.rst",
            category="Overview",
            labels=get_table_labels("overview"),
        ),
        runs_html=report(
            "results/tables/runs.html",
            caption="../report/runs.rst",
            category="Runs",
            labels=get_table_labels("all runs"),
        ),
        scaling_html=report(
            "results/tables/scaling.html",
            caption="../report/scaling_tables.rst",
            category="Scaling",
            subcategory="tables",
            labels=get_table_labels("scaling tables"),
        ),
        references_html=report(
            "results/tables/references.html",
            caption="../report/references.rst",
            category="References",
            labels=get_table_labels("measured vs reference"),
        ),
        failures_html=report(
            "results/tables/failures.html",
            caption="../report/failures.rst",
            category="Failures",
            labels=get_table_labels("failed runs"),
        ),
        profiles_html=report(
            "results/tables/profiles.html",
            caption="../report/profiles.rst",
            category="Profiles",
            labels=get_table_labels("profiling runs"),
        ),
        why_slower_html=report(
            "results/tables/why_slower.html",
            caption="../report/why_slower.rst",
            category="Why slower",
            labels=get_table_labels("why slower"),
        ),
        # the sweep's stable machine-readable result (docs/results.md)
        result="results/result.json",
    log:
        "results/logs/aggregate.log",
    conda:
        "../../envs/llmbench.yaml"
    # the steps table and its Parquet are built on a second thread (llmbench.aggregate.job)
    threads: 2
    params:
        train_tokens=CONFIG["total_tokens"],
        tolerance=get_reference_tolerance(),
        config_sha256=CONFIG_SHA256,
        cluster=HISTORY["cluster"],
        stage=STAGE,
        fabric=CONFIG.get("fabric"),
    script:
        "../scripts/aggregate.py"
