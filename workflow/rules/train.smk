rule train:
    input:
        unpack(SWEEP.setup_inputs),
        **SWEEP.preflight_inputs(),
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
    retries: SWEEP.infra_retries + 1
    conda:
        "../../envs/llmbench.yaml"
    threads: SWEEP.train_threads()
    resources:
        bench=SWEEP.train_bench(),
        nodes=SWEEP.train_resource("nodes"),
        tasks_per_node=SWEEP.train_resource("tasks_per_node"),
        cpus_per_task=SWEEP.train_resource("cpus_per_task"),
        mem_mb=SWEEP.train_resource("mem_mb"),
        mem_mb_per_cpu=SWEEP.train_resource("mem_mb_per_cpu"),
        tasks=SWEEP.train_resource("tasks"),
        mpi=SWEEP.train_resource("mpi"),
        gres=SWEEP.train_resource("gres"),
        runtime=SWEEP.train_resource("runtime"),
        slurm_extra=SWEEP.train_resource("slurm_extra"),
        llmbench_try=SWEEP.try_number,
    params:
        run=SWEEP.train_params,
        infra_retries=SWEEP.infra_retries,
    script:
        "../scripts/train.py"
