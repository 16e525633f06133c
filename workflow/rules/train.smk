rule train:
    input:
        unpack(get_setup_inputs),
        **get_preflight_inputs(),
    output:
        record="results/runs/{run}/run.json",
        # The log is parsed where it was written, in the same job: one job per run keeps
        # the DAG of a 10,000-run sweep small (benchmarks/dry_run.py).
        summary="results/runs/{run}/summary.json",
        steps="results/runs/{run}/steps.parquet",
        # samples and window energy of the reported attempt (llmbench.telemetry)
        telemetry="results/runs/{run}/telemetry.parquet",
        energy="results/runs/{run}/energy.json",
    log:
        "results/logs/train/{run}.log",
    # one more than the infra retries: the last try records a killed attempt as a result
    retries: CONFIG["failures"]["infra_retries"] + 1
    conda:
        "../../envs/llmbench.yaml"
    threads: get_train_threads()
    resources:
        bench=get_train_bench(),
        nodes=get_train_resources("nodes"),
        tasks_per_node=get_train_resources("tasks_per_node"),
        cpus_per_task=get_train_resources("cpus_per_task"),
        mem_mb=get_train_resources("mem_mb"),
        mem_mb_per_cpu=get_train_resources("mem_mb_per_cpu"),
        tasks=get_train_resources("tasks"),
        mpi=get_train_resources("mpi"),
        gres=get_train_resources("gres"),
        runtime=get_train_resources("runtime"),
        slurm_extra=get_train_resources("slurm_extra"),
        llmbench_try=get_try_number,
    params:
        run=get_train_params,
        infra_retries=CONFIG["failures"]["infra_retries"],
    script:
        "../scripts/train.py"
