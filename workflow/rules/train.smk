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
        nodes=get_train_resources("nodes"),
        tasks_per_node=get_train_resources("tasks_per_node"),
        cpus_per_task=get_train_resources("cpus_per_task"),
        tasks=get_train_resources("tasks"),
        mpi=get_train_resources("mpi"),
        gres=get_train_resources("gres"),
        runtime=get_train_resources("runtime"),
        slurm_extra=get_train_resources("slurm_extra"),
    params:
        spec=get_spec,
        retry_of=get_retry_token,
        env=get_launch_env,
    script:
        "../scripts/train.py"
