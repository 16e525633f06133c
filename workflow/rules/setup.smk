rule import_image:
    output:
        sqsh=f"{STAGE}/{IMAGES_DIR}/{{sqsh}}",
    log:
        "results/logs/import_image/{sqsh}.log",
    wildcard_constraints:
        sqsh=get_sqsh_constraint(),
    localrule: SETUP_LOCAL
    conda:
        "../../envs/llmbench.yaml"
    resources:
        **get_setup_resources(),
    params:
        image=get_import_param("image"),
        arch=get_import_param("arch"),
        registry=CONFIG["registry"],
    script:
        "../scripts/import_image.py"


rule training_venv:
    input:
        requirements=VENV_REQUIREMENTS or [],
    output:
        marker=venv_marker_path(STAGE),
    log:
        "results/logs/training_venv.log",
    localrule: SETUP_LOCAL
    conda:
        "../../envs/llmbench.yaml"
    resources:
        **get_setup_resources(),
    script:
        "../scripts/training_venv.py"
