rule preflight_node:
    input:
        unpack(get_preflight_image_input),
    output:
        result="results/preflight/nodes/{node}.json",
    log:
        "results/logs/preflight/{node}.log",
    wildcard_constraints:
        node="|".join(map(re.escape, PREFLIGHT.nodes)) or "(?!)",
    conda:
        "../../envs/llmbench.yaml"
    threads: PREFLIGHT.ranks if PREFLIGHT.gpu_type == "cpu" else 1
    resources:
        nodes=get_preflight_node_resources("nodes"),
        tasks=get_preflight_node_resources("tasks"),
        cpus_per_task=get_preflight_node_resources("cpus_per_task"),
        gres=get_preflight_node_resources("gres"),
        runtime=get_preflight_node_resources("runtime"),
        slurm_extra=get_preflight_node_resources("slurm_extra"),
    params:
        settings=PREFLIGHT.to_dict(),
        image=get_preflight_image(),
    script:
        "../scripts/preflight_node.py"


checkpoint preflight_gate:
    input:
        results=expand("results/preflight/nodes/{node}.json", node=PREFLIGHT.nodes),
    output:
        exclude=PREFLIGHT_EXCLUDE,
        nodes="results/tables/nodes.parquet",
        nodes_html=report(
            "results/tables/nodes.html",
            caption="../report/cluster.rst",
            category="Cluster",
            labels={"content": "preflight nodes"},
        ),
    log:
        "results/logs/preflight/gate.log",
    conda:
        "../../envs/llmbench.yaml"
    params:
        settings=PREFLIGHT.to_dict(),
    script:
        "../scripts/preflight_gate.py"


rule preflight_fabric:
    input:
        unpack(get_preflight_image_input),
        exclude=PREFLIGHT_EXCLUDE,
    output:
        result=PREFLIGHT_FABRIC,
    log:
        "results/logs/preflight/fabric.log",
    conda:
        "../../envs/llmbench.yaml"
    resources:
        nodes=PREFLIGHT.nodes_needed,
        tasks_per_node=PREFLIGHT.ranks,
        mpi="srun",
        gres=f"gpu:{PREFLIGHT.ranks}",
        runtime=30,
        slurm_extra=get_fabric_extra,
    params:
        settings=PREFLIGHT.to_dict(),
        image=get_preflight_image(),
    script:
        "../scripts/preflight_fabric.py"
