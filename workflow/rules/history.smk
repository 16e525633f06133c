rule history_add:
    input:
        sweep=SWEEP.paths.sweep,
        runs=SWEEP.paths.runs_table,
        steps=SWEEP.paths.steps_table,
    output:
        added=SWEEP.paths.history_added,
    log:
        SWEEP.paths.log("history_add"),
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
            directory(SWEEP.paths.history_trends),
            patterns=["{name}.svg"],
            caption="../report/history.rst",
            category="History",
            labels=SWEEP.trend_labels,
        ),
    log:
        SWEEP.paths.log("history_trends"),
    localrule: True
    conda:
        "../../envs/llmbench.yaml"
    params:
        history=SWEEP.history["path"],
        days=SWEEP.history["trend_days"],
        tolerance=SWEEP.reference_tolerance,
    script:
        "../scripts/history_trends.py"
