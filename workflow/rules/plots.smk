rule plot_scaling:
    input:
        runs="results/tables/runs.parquet",
    output:
        step_time=report(
            "results/plots/{group}/step_time.svg",
            caption="../report/step_time.rst",
            category="Scaling",
            subcategory="{group}",
            labels={"group": "{group}", "metric": "step time"},
        ),
        tokens_per_s=report(
            "results/plots/{group}/tokens_per_s.svg",
            caption="../report/tokens_per_s.rst",
            category="Scaling",
            subcategory="{group}",
            labels={"group": "{group}", "metric": "tokens/s"},
        ),
        mfu=report(
            "results/plots/{group}/mfu.svg",
            caption="../report/mfu.rst",
            category="Scaling",
            subcategory="{group}",
            labels={"group": "{group}", "metric": "MFU"},
        ),
        png=multiext(
            "results/plots/{group}/", "step_time.png", "tokens_per_s.png", "mfu.png"
        ),
    log:
        "results/logs/plot_scaling/{group}.log",
    conda:
        "../../envs/llmbench.yaml"
    params:
        runs=get_group_runs,
    script:
        "../scripts/plot_scaling.py"
