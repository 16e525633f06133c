import re
import sys

from llmbench.config import run_specs, validate_config
from llmbench.errors import ConfigError
from llmbench.plots import plot_files

try:
    CONFIG = validate_config(config, source="config")
except ConfigError as err:
    # One line, no traceback: the message names the key, the bad value and what is allowed.
    sys.exit(f"llmbench: error: {err}")

RUNS = {spec.run_id: spec for spec in run_specs(CONFIG)}
GROUPS = {}
for _spec in RUNS.values():
    GROUPS.setdefault(_spec.group_id, []).append(_spec.run_id)


wildcard_constraints:
    run="|".join(map(re.escape, RUNS)),
    group="|".join(map(re.escape, GROUPS)),


def get_spec(wildcards):
    return RUNS[wildcards.run].to_dict()


def get_train_threads(wildcards):
    spec = RUNS[wildcards.run]
    return spec.gpus_per_node * spec.threads_per_rank


def run_files(name):
    return [f"results/runs/{run}/{name}" for run in RUNS]


def get_peak_inputs(wildcards):
    needs_cpu = any(spec.gpu_type == "cpu" for spec in RUNS.values())
    return {"cpu_peak": "results/calibration/cpu_peak.json"} if needs_cpu else {}


def get_group_runs(wildcards):
    return GROUPS[wildcards.group]


def get_final_outputs():
    plots = [
        str(path)
        for group in GROUPS
        for path in plot_files(Path("results/plots") / group)
    ]
    return [
        "results/tables/runs.parquet",
        "results/tables/runs.csv",
        "results/tables/steps.parquet",
        "results/tables/runs.html",
        *plots,
    ]
