rule train:
    output:
        record="results/runs/{run}/run.json",
    log:
        "results/logs/train/{run}.log",
    conda:
        "../../envs/llmbench.yaml"
    threads: get_train_threads
    resources:
        bench=1,
    params:
        spec=get_spec,
    script:
        "../scripts/train.py"
