from snakemake.utils import min_version

min_version("9.0")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
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
        SWEEP.all_outputs(),
        # Each run's record too: Snakemake redoes a missing file only for a target or for
        # a job that runs anyway, so a deleted run folder is redone (docs/failures.md).
        SWEEP.run_records,
