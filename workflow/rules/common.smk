import functools
import os
import re
import sys
from pathlib import Path


from llmbench.workflow import spec_cache, wiring
from llmbench.job.attempts import retry_token
from llmbench.files.disk_space import free_bytes, low_space
from llmbench.launch.platforms import PLATFORM_LAUNCHERS, missing_secret
from llmbench.spec.runspec import GROUP_ID_PATTERN, RUN_ID_PATTERN
from llmbench.launch.slurm import SBATCH_ENVIRONMENT, slurm_resources
from llmbench.spec.stage import (
    IMAGES_DIR,
    checkpoint_source,
    checkpoint_space_warning,
    image_import,
    image_imports,
    image_path,
    needs_venv,
    venv_marker_path,
    venv_requirements_path,
)
from llmbench.errors import ConfigError
from llmbench.job.sweep_processes import mark_workflow_process

# Before any job exists: resource evaluation then skips a signature parse per resource.
wiring.store_resource_evaluate_params()
# Relative setup files: the working directory first, else this workflow's folder.
_BASE_DIRS = [Path.cwd(), Path(workflow.basedir)]
# Snakemake reads this file again inside every job (twice per job under Slurm): there the
# config and run specs the main process checked are read back (llmbench.workflow.spec_cache), and
# warnings meant for the person who started the sweep are left to the main process.
MAIN_PROCESS = workflow.is_main_process
if MAIN_PROCESS:
    # On a full disk Snakemake's lock and log fail next, in tracebacks: one line instead.
    _space = low_space([Path.cwd(), Path("results")])
    if _space:
        sys.exit(f"llmbench: error: {_space}")
    # The train jobs this process runs end their run when it is gone (llmbench.job.supervise).
    mark_workflow_process(os.environ)
SPEC_CACHE = ".snakemake/llmbench/specs.json"
_checked = None
if not MAIN_PROCESS:
    _checked = spec_cache.read_specs(SPEC_CACHE, CONFIG_FILE, config, _BASE_DIRS)
if _checked is None:
    # The full check (the schema, the catalog's rules): imported only where it runs.
    from llmbench.workflow.config_check import check_workflow_config

    try:
        # The Snakefile names no `configfile:`: config.yaml is read by the same loader and
        # checks as `llmbench plan`, with --configfile/--config values merged over it.
        _checked = check_workflow_config(
            config,
            CONFIG_FILE,
            _BASE_DIRS,
            warn=(
                (lambda line: print(f"llmbench: warning: {line}", file=sys.stderr))
                if MAIN_PROCESS
                else None
            ),
            cache=SPEC_CACHE if MAIN_PROCESS else None,
        )
    except ConfigError as err:
        # One line, no traceback: the message names the key, the bad value and what is
        # allowed.
        sys.exit(f"llmbench: error: {err}")
CONFIG, _specs = _checked
# Defaults filled in for everything that reads Snakemake's own config (the report's
# captions), as snakemake.utils.validate(set_default=True) would.
config.update(CONFIG)

RUNS = {spec.run_id: spec for spec in _specs}


onstart:
    # A sweep that is about to run (not a dry run): the Run:ai secret its train jobs read
    # from this environment must be here before the first one starts.
    _secret = missing_secret(RUNS.values())
    if _secret:
        sys.exit(f"llmbench: error: {_secret}")


_missing = wiring.missing_embedded_packages(_specs)
if _missing:  # before any run: a plain `pip install .` has no torch
    sys.exit(f"llmbench: error: {_missing}")
# sbatch reads a training job's "all of the node's memory" from here (llmbench.launch.slurm).
for _name, _value in SBATCH_ENVIRONMENT.items():
    os.environ.setdefault(_name, _value)
STAGE = CONFIG["stage_path"]
IMAGES = image_imports(RUNS.values())  # .sqsh file name -> (image, arch)
SETUP_LOCAL = CONFIG["setup"]["run_on"] == "local"
if MAIN_PROCESS and any(spec.variant == "ckpt-save" for spec in RUNS.values()):
    _space = checkpoint_space_warning(RUNS.values(), free_bytes(STAGE))
    if _space:
        print(f"llmbench: warning: {_space}", file=sys.stderr)
VENV_REQUIREMENTS = venv_requirements_path(CONFIG, _BASE_DIRS)
GROUPS = wiring.run_groups(RUNS.values())


# Id shapes, not lists of ids: a list is substituted into every file pattern (quadratic
# DAG building). Input functions look the ids up, so an unknown id is still an error.
wildcard_constraints:
    run=RUN_ID_PATTERN,
    group=GROUP_ID_PATTERN,


@functools.cache
def _train_params(run):
    # Once per run: Snakemake evaluates params several times per job.
    return {
        "spec": RUNS[run].to_dict(),
        # Changes exactly when the reported attempt did not succeed (llmbench.job.attempts),
        # so rerunning the same command redoes failed runs and keeps the rest.
        "retry_of": retry_token(
            f"results/runs/{run}", CONFIG["failures"]["keep_failed"]
        ),
        "env": wiring.launch_env(RUNS[run], STAGE, CONFIG["master_addr"]),
        "telemetry": CONFIG["telemetry"],
    }


@wiring.with_signature
def get_train_params(wildcards):
    # One params callable, not three: Snakemake evaluates each several times per job.
    return _train_params(wildcards.run)


def _train_threads(spec):
    # a platform launcher's job only submits and waits; the ranks run remotely
    if spec.launcher in PLATFORM_LAUNCHERS:
        return 1
    return spec.gpus_per_node * spec.threads_per_rank


def get_train_bench():
    # profiles/default (applied with every profile) allows one `bench` job at a time so
    # that local timings do not share cores; a platform's runs do not run here.
    on_platform = all(s.launcher in PLATFORM_LAUNCHERS for s in RUNS.values())
    return 0 if on_platform else 1


def get_train_threads():
    threads = {run: _train_threads(s) for run, s in RUNS.items()}
    return wiring.per_run(threads, lambda run, attempt: threads[run])


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


@wiring.with_signature
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


@wiring.with_signature
def get_try_number(wildcards, attempt):
    # Snakemake hands its try counter only to resource functions; the train script reads
    # it back to tell a first try from a retry.
    return attempt


@functools.cache
def train_resources(run, attempt, preflight_exclude=""):
    # Once per job try, not once per resource: a retry's node check queries Slurm.
    return wiring.train_resources(
        RUNS[run],
        Path("results/runs") / run,
        attempt,
        CONFIG["slurm"],
        CONFIG["threads_per_rank"],
        preflight_exclude,
    )


def get_train_resources(name):
    # slurm_extra changes on a retry (nodes to avoid) and with the preflight gate's
    # verdict, so it is computed per try. The others depend on neither: they are the first
    # try's without exclusions, one train_resources call per run shared by every name.
    # The main process folds a value every run shares into a constant; inside a job
    # Snakemake asks for its one run only, so no table of every run's is built there.
    if name == "slurm_extra":

        def of_try(run, attempt):
            return train_resources(run, attempt, preflight_excluded())[name]

        return wiring.per_run({}, of_try, varies=True)

    def first_try(run, attempt):
        return train_resources(run, 1, "")[name]

    values = {run: first_try(run, 1) for run in RUNS} if MAIN_PROCESS else {}
    return wiring.per_run(values, first_try)


def get_run_records(wildcards):
    # A function, not a list in the rule: built with the job that needs it, not each
    # time a job reads the Snakefile (a list of every run's file costs each read).
    return [f"results/runs/{run}/run.json" for run in RUNS]


def get_run_dirs(wildcards):
    # The telemetry table's runs, as a param: its job waits for the runs table, whose
    # job lists every run.json already.
    return [f"results/runs/{run}" for run in RUNS]


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


def get_reference_tolerance():
    return float(CONFIG["reference"]["tolerance"])  # the schema's default filled in


def get_reference_input(wildcards):
    path = CONFIG["reference"]["file"]
    return {"reference": path} if path else {}


def get_table_labels(table):
    return {**wiring.label_values(RUNS.values()), "content": table}


def get_plot_labels(wildcards):
    specs = [RUNS[run] for run in GROUPS[wildcards.group]]
    return {**wiring.label_values(specs), "content": wildcards.name.replace("_", " ")}
