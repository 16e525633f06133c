rule history_add:
    input:
        sweep="results/tables/sweep.json",
        runs="results/tables/runs.parquet",
        steps="results/tables/steps.parquet",
    output:
        added="results/history/added.json",
    log:
        "results/logs/history_add.log",
    localrule: True
    conda:
        "../../envs/llmbench.yaml"
    params:
        history=SWEEP.history["path"],
    script:
        "../scripts/history_add.py"


rule history_trends:
    input:
        unpack(SWEEP.history_trend_inputs),
    output:
        plots=report(
            directory("results/history/trends"),
            patterns=["{name}.svg"],
            caption="../report/history.rst",
            category="History",
            labels=SWEEP.trend_labels,
        ),
    log:
        "results/logs/history_trends.log",
    localrule: True
    conda:
        "../../envs/llmbench.yaml"
    params:
        history=SWEEP.history["path"],
        days=SWEEP.history["trend_days"],
        tolerance=SWEEP.reference_tolerance,
    script:
        "../scripts/history_trends.py"
