from snakemake.utils import min_version

min_version("9.0")


# Not `configfile:`: workflow/rules/common.smk reads it through llmbench's validator.
CONFIG_FILE = "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/common_history.smk"
include: "workflow/rules/common_cluster.smk"
include: "workflow/rules/setup.smk"
include: "workflow/rules/calibrate.smk"
include: "workflow/rules/preflight.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/plots.smk"
include: "workflow/rules/telemetry.smk"
include: "workflow/rules/history.smk"


rule all:
    default_target: True
    input:
        get_final_outputs(),
        get_history_outputs(),
        get_preflight_outputs(),
        get_telemetry_outputs(),
