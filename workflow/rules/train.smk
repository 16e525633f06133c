rule train:
    output:
        record="results/runs/{run}/run.json",
    log:
        "results/logs/train/{run}.log",
    params:
        spec=get_spec,
    threads: get_train_threads
    resources:
        bench=1,
    script:
        "../scripts/train.py"
