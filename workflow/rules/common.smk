import functools
import os
import re
import sys

from llmbench.attempts import nodes_to_avoid, retry_token
from llmbench.config import venv_requirements_path, workflow_config
from llmbench.runspec import GROUP_ID_PATTERN, RUN_ID_PATTERN
from llmbench.slurm import slurm_resources
from llmbench.stage import (
    IMAGES_DIR,
    checkpoint_source,
    checkpoint_space_warning,
    free_bytes,
    image_import,
    image_imports,
    image_path,
    needs_venv,
    venv_marker_path,
    venv_python,
)
from llmbench.errors import ConfigError
from llmbench.plots import plot_files

# Relative setup files: the working directory first, else this workflow's folder.
_BASE_DIRS = [Path.cwd(), Path(workflow.basedir)]
try:
    # The Snakefile names no `configfile:`: config.yaml is read here, by the same loader
    # and checks as `llmbench plan`, with --configfile/--config values merged over it.
    CONFIG, _specs = workflow_config(config, CONFIG_FILE, _BASE_DIRS)
except ConfigError as err:
    # One line, no traceback: the message names the key, the bad value and what is allowed.
    sys.exit(f"llmbench: error: {err}")
# Defaults filled in for everything that reads Snakemake's own config (the report's
# captions), as snakemake.utils.validate(set_default=True) would.
config.update(CONFIG)

RUNS = {spec.run_id: spec for spec in _specs}
STAGE = CONFIG["stage_path"]
IMAGES = image_imports(RUNS.values())  # .sqsh file name -> (image, arch)
SETUP_LOCAL = CONFIG["setup"]["run_on"] == "local"
if any(spec.variant == "ckpt-save" for spec in RUNS.values()):
    _space = checkpoint_space_warning(RUNS.values(), free_bytes(STAGE))
    if _space:
        print(f"llmbench: warning: {_space}", file=sys.stderr)
VENV_REQUIREMENTS = venv_requirements_path(CONFIG, _BASE_DIRS)
GROUPS = {}
for _spec in RUNS.values():
    GROUPS.setdefault(_spec.group_id, []).append(_spec.run_id)


# Id shapes, not lists of ids: a list is substituted into every file pattern (quadratic
# DAG building). Input functions look the ids up, so an unknown id is still an error.
wildcard_constraints:
    run=RUN_ID_PATTERN,
    group=GROUP_ID_PATTERN,


@functools.cache
def _train_params(run):
    return {
        "spec": RUNS[run].to_dict(),
        # Changes exactly when the reported attempt did not succeed (llmbench.attempts),
        # so rerunning the same command redoes failed runs and keeps the rest.
        "retry_of": retry_token(
            Path("results/runs") / run, CONFIG["failures"]["keep_failed"]
        ),
        "env": _launch_env(RUNS[run]),
    }


def get_train_params(wildcards):
    # One params callable, not three: Snakemake evaluates each several times per job.
    return _train_params(wildcards.run)


def _train_threads(spec):
    return spec.gpus_per_node * spec.threads_per_rank


def get_train_threads():
    values = {_train_threads(spec) for spec in RUNS.values()}
    if len(values) == 1:  # a constant is cheaper to Snakemake than a callable
        return values.pop()

    def threads(wildcards):
        return _train_threads(RUNS[wildcards.run])

    return threads


def get_sqsh_constraint():
    return "|".join(map(re.escape, IMAGES)) or "(?!)"  # (?!) matches nothing


def get_import_param(name):
    def param(wildcards):
        return getattr(IMAGES[wildcards.sqsh], name)

    return param


def get_setup_resources():
    # Setup jobs need a few cores and no GPU; a CPU partition where the site has one.
    resources = {"runtime": 120, "cpus_per_task": 4, "mem_mb": 16000}
    if CONFIG["setup"]["partition"]:
        resources["slurm_partition"] = CONFIG["setup"]["partition"]
    return resources


def get_setup_inputs(wildcards):
    """The run's image (container: enroot), the training venv (framework workloads) and,
    for ckpt-load, the ckpt-save run whose checkpoint it restores."""
    spec = RUNS[wildcards.run]
    inputs = {}
    source = checkpoint_source(spec)
    if source in RUNS:
        inputs["saved_by"] = f"results/runs/{source}/run.json"
    imported = image_import(spec)
    if imported is not None:
        inputs["image"] = image_path(STAGE, imported)
    if needs_venv(spec):
        inputs["venv"] = venv_marker_path(STAGE)
    return inputs


def _launch_env(spec):
    env = {"LLMBENCH_STAGE_PATH": str(Path(STAGE).resolve())}
    if needs_venv(spec):
        env["LLMBENCH_PYTHON"] = str(Path(venv_python(STAGE)).resolve())
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
    return slurm_resources(RUNS[run], extras, CONFIG["threads_per_rank"])


def get_train_resources(name):
    # A value every run of the sweep shares is a constant: Snakemake evaluates a callable
    # several times per job, which dominates the dry run of a large sweep. Only
    # slurm_extra changes on a retry (nodes to avoid).
    values = {train_resources(run, 1)[name] for run in RUNS}
    if name != "slurm_extra" and len(values) == 1:
        return values.pop()

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
