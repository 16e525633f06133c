rule calibrate_cpu_peak:
    output:
        peak=SWEEP.paths.cpu_peak,
    log:
        SWEEP.paths.log("calibrate_cpu_peak"),
    # a node lost under the job (Slurm's NODE_FAIL) is the node's failure, not the
    # measurement's: the job runs again elsewhere, as a train job's infrastructure retry
    retries: 2
    conda:
        "../../envs/llmbench.yaml"
    threads: 1
    resources:
        bench=1,
    params:
        threads=SWEEP.config["threads_per_rank"],
    script:
        "../scripts/calibrate_cpu_peak.py"
