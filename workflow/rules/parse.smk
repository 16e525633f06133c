rule parse_run:
    input:
        record="results/runs/{run}/run.json",
    output:
        summary="results/runs/{run}/summary.json",
        steps="results/runs/{run}/steps.parquet",
    log:
        "results/logs/parse_run/{run}.log",
    conda:
        "../../envs/llmbench.yaml"
    script:
        "../scripts/parse_run.py"
