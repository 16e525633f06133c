rule preflight_node:
    input:
        unpack(SWEEP.preflight_image_input),
    output:
        result=SWEEP.paths.preflight_node,
    log:
        SWEEP.paths.log("preflight/{node}"),
    wildcard_constraints:
        node=SWEEP.preflight_node_constraint(),
    conda:
        "../../envs/llmbench.yaml"
    threads: SWEEP.preflight_node_threads()
    resources:
        nodes=SWEEP.preflight_node_resource("nodes"),
        tasks=SWEEP.preflight_node_resource("tasks"),
        cpus_per_task=SWEEP.preflight_node_resource("cpus_per_task"),
        gres=SWEEP.preflight_node_resource("gres"),
        runtime=SWEEP.preflight_node_resource("runtime"),
        slurm_extra=SWEEP.preflight_node_resource("slurm_extra"),
    params:
        settings=SWEEP.preflight.to_dict(),
        image=SWEEP.preflight_image(),
    script:
        "../scripts/preflight_node.py"


checkpoint preflight_gate:
    input:
        results=SWEEP.preflight_node_results(),
    output:
        exclude=SWEEP.preflight_exclude,
        nodes=SWEEP.paths.nodes_table,
        nodes_html=report(
            SWEEP.paths.page("nodes"),
            caption="../report/cluster.rst",
            category="Cluster",
            labels={"content": "preflight nodes"},
        ),
    log:
        SWEEP.paths.log("preflight/gate"),
    conda:
        "../../envs/llmbench.yaml"
    params:
        settings=SWEEP.preflight.to_dict(),
    script:
        "../scripts/preflight_gate.py"


rule preflight_fabric:
    input:
        unpack(SWEEP.preflight_image_input),
        exclude=SWEEP.preflight_exclude,
    output:
        result=SWEEP.preflight_fabric,
    log:
        SWEEP.paths.log("preflight/fabric"),
    conda:
        "../../envs/llmbench.yaml"
    resources:
        **SWEEP.fabric_resources(),
        slurm_extra=SWEEP.fabric_extra,
    params:
        settings=SWEEP.preflight.to_dict(),
        image=SWEEP.preflight_image(),
    script:
        "../scripts/preflight_fabric.py"
