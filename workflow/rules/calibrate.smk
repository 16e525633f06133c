rule calibrate_cpu_peak:
    output:
        peak="results/calibration/cpu_peak.json",
    log:
        "results/logs/calibrate_cpu_peak.log",
    conda:
        "../../envs/llmbench.yaml"
    threads: 1
    resources:
        bench=1,
    params:
        threads=SWEEP.config["threads_per_rank"],
    script:
        "../scripts/calibrate_cpu_peak.py"
