rule train:
    input:
        unpack(SWEEP.setup_inputs),
        **SWEEP.preflight_inputs(),
    output:
        record=SWEEP.paths.run_record,
        # The log is parsed where it was written, in the same job: one job per run keeps
        # the DAG of a 10,000-run sweep small (benchmarks/dry_run.py).
        summary=SWEEP.paths.run_summary,
        steps=SWEEP.paths.run_steps,
        # samples and window energy of the reported attempt (llmbench.telemetry)
        telemetry=SWEEP.paths.run_telemetry,
        energy=SWEEP.paths.run_energy,
    log:
        SWEEP.paths.log("train/{run}"),
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
