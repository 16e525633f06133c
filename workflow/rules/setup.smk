rule import_image:
    output:
        sqsh=SWEEP.image_output,
    log:
        SWEEP.paths.log("import_image/{sqsh}"),
    wildcard_constraints:
        sqsh=SWEEP.sqsh_constraint(),
    localrule: SWEEP.setup_local
    conda:
        "../../envs/llmbench.yaml"
    resources:
        **SWEEP.setup_resources(),
    params:
        image=SWEEP.image_param("image"),
        arch=SWEEP.image_param("arch"),
        registry=SWEEP.config["registry"],
    script:
        "../scripts/import_image.py"


rule training_venv:
    input:
        requirements=SWEEP.venv_requirements or [],
    output:
        marker=SWEEP.venv_marker,
    log:
        SWEEP.paths.log("training_venv"),
    localrule: SWEEP.setup_local
    conda:
        "../../envs/llmbench.yaml"
    resources:
        **SWEEP.setup_resources(),
    script:
        "../scripts/training_venv.py"
