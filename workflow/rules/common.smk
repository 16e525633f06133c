# The one file that defines names for the rules: SWEEP answers every value a rule needs
# (llmbench.workflow.sweep); the other .smk files only wire those values to rules.
from pathlib import Path

from llmbench.core.runspec import GROUP_ID_PATTERN, RUN_ID_PATTERN
from llmbench.workflow.finish import print_summary
from llmbench.workflow.sweep import load_sweep

# Not `configfile:`: llmbench reads it with the same loader and checks as `llmbench plan`,
# with --configfile/--config values merged over it.
CONFIG_FILE = "config.yaml"
# Relative setup files: the working directory first, else this workflow's folder.
SWEEP = load_sweep(
    config,
    CONFIG_FILE,
    [Path.cwd(), Path(workflow.basedir)],
    workflow.is_main_process,
)


# Id shapes, not lists of ids: a list is substituted into every file pattern (quadratic
# DAG building). Input functions look the ids up, so an unknown id is still an error.
wildcard_constraints:
    run=RUN_ID_PATTERN,
    group=GROUP_ID_PATTERN,


onstart:
    SWEEP.check_before_start()


# At the end of a real run (not a dry run): the outcomes and where the tables are.
onsuccess:
    print_summary(SWEEP.runs, succeeded=True)


onerror:
    print_summary(SWEEP.runs, succeeded=False)
