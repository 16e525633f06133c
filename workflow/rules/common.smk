import functools
import re
import sys

from llmbench.attempts import nodes_to_avoid, retry_token
from llmbench.config import run_specs, validate_config
from llmbench.slurm import slurm_resources
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


def get_retry_token(wildcards):
    # Changes exactly when the reported attempt did not succeed (llmbench.attempts), so
    # rerunning the same command redoes failed runs and keeps the rest.
    return retry_token(
        Path("results/runs") / wildcards.run, CONFIG["failures"]["keep_failed"]
    )


def get_launch_env(wildcards):
    env = {"LLMBENCH_STAGE_PATH": str(Path(CONFIG["stage_path"]).resolve())}
    if CONFIG["master_addr"]:
        env["LLMBENCH_MASTER_ADDR"] = CONFIG["master_addr"]
    return env


def get_try_number(wildcards, attempt):
    # Snakemake hands its try counter only to resource functions; the train script reads
    # it back to tell a first try from a retry.
    return attempt


@functools.cache
def train_resources(run, attempt):
    # Once per job try, not once per resource: a retry's node check queries Slurm.
    extras = dict(CONFIG["slurm"])
    if attempt > 1:  # a retry avoids the nodes an infrastructure failure hit
        avoid = nodes_to_avoid(Path("results/runs") / run)
        if avoid:
            extras["exclude"] = ",".join(filter(None, [extras.get("exclude"), avoid]))
    return slurm_resources(
        RUNS[run], extras, CONFIG["threads_per_rank"], CONFIG["runtime_min"]
    )


def get_train_resources(name):
    def resource(wildcards, attempt):
        return train_resources(wildcards.run, attempt)[name]

    return resource


def run_files(name):
    return [f"results/runs/{run}/{name}" for run in RUNS]


def get_peak_inputs(wildcards):
    needs_cpu = any(spec.gpu_type == "cpu" for spec in RUNS.values())
    return {"cpu_peak": "results/calibration/cpu_peak.json"} if needs_cpu else {}


def get_group_runs(wildcards):
    return GROUPS[wildcards.group]


def get_final_outputs():
    tables = ["runs.parquet", "runs.csv", "steps.parquet", "scaling.md"]
    pages = ["overview", "runs", "scaling", "references", "failures", "profiles"]
    return [
        *(f"results/tables/{name}" for name in tables),
        *(f"results/tables/{name}.html" for name in pages),
        *(f"results/plots/{group}" for group in GROUPS),
    ]


def get_reference_settings():
    """The ``reference`` config block with its defaults (tolerance 5 %, no user file)."""
    return {"tolerance": 0.05, "file": None, **(CONFIG.get("reference") or {})}


def get_reference_tolerance():
    return float(get_reference_settings()["tolerance"])


def get_reference_input(wildcards):
    path = get_reference_settings()["file"]
    return {"reference": path} if path else {}


def _label_values(specs):
    scales = sorted({spec.gpus for spec in specs})
    unit = "CPU ranks" if all(s.gpu_type == "cpu" for s in specs) else "GPUs"
    return {
        "workload": ", ".join(sorted({s.workload for s in specs})),
        "size": ", ".join(sorted({s.size for s in specs})),
        "dtype": ", ".join(sorted({s.dtype for s in specs})),
        "GPU type": ", ".join(sorted({s.gpu_type for s in specs})),
        "scale": f"{scales[0]}-{scales[-1]} {unit}" if scales else "",
    }


def get_table_labels(table):
    return {**_label_values(list(RUNS.values())), "content": table}


def get_plot_labels(wildcards):
    specs = [RUNS[run] for run in GROUPS[wildcards.group]]
    return {**_label_values(specs), "content": wildcards.name.replace("_", " ")}
