"""One object answers every value the workflow's rules ask for: ``workflow/rules/common.smk``
builds it once (``load_sweep``) and the rules read ``SWEEP.<value>``, so the ``.smk`` files
only wire (``tests/workflow/test_glue.py``).

Snakemake reads the Snakefile again inside every job (twice per job under Slurm): there
the config and run specs the main process checked are read back
(``llmbench.workflow.spec_cache``), and warnings meant for the person who started the
sweep are left to the main process. Values asked per run are computed once per run: a
rule's callables are evaluated several times per job.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from llmbench.core.devices import device
from llmbench.core.launchers import is_platform
from llmbench.core.preflight_settings import PreflightSettings, resolve_preflight
from llmbench.core.results_layout import NODES_PAGE, PAGES, RESULTS, results_paths
from llmbench.core.runspec import RunSpec
from llmbench.core.site_file import with_site_file
from llmbench.core.stage import (
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
from llmbench.errors import ConfigError, exit_with_error
from llmbench.files.disk_space import free_bytes, low_space, not_writable
from llmbench.history.sweep import config_sha256
from llmbench.job.attempts import retry_token
from llmbench.job.sweep_processes import mark_workflow_process
from llmbench.launch import slurm
from llmbench.launch.launchers import LAUNCHERS, missing_before_start
from llmbench.launch.slurm import SBATCH_ENVIRONMENT
from llmbench.workflow import rule_values, spec_cache

SPEC_CACHE = ".snakemake/llmbench/specs.json"
PATHS = results_paths()
"""Where the rules write in ``results/`` (``llmbench.core.results_layout``)."""
NOTHING = "(?!)"
"""A wildcard constraint that matches nothing (no such file in this sweep)."""
Wildcards = Any
"""Snakemake's wildcards object: attributes named after the rule's wildcards."""


def load_sweep(
    snakemake_config: MutableMapping[str, Any],
    config_file: str,
    base_dirs: Sequence[str | Path],
    main_process: bool,
    environ: MutableMapping[str, str] = os.environ,
) -> Sweep:
    """The sweep of ``config_file`` with Snakemake's ``--config``/``--configfile`` values
    merged over it, checked as ``llmbench plan`` checks it (the main process), or read back
    from the main process's check (inside a job). Exits with one line on a bad config.
    Snakemake's own ``config`` gets the defaults filled in (the report's captions read it)."""
    if main_process:
        # On a full disk Snakemake's lock and log fail next, in tracebacks: one line instead.
        space = low_space([Path.cwd(), Path(RESULTS)])
        if space:
            exit_with_error(space)
        # The train jobs this process runs end their run when it is gone (job.supervise).
        mark_workflow_process(environ)
    checked = None
    try:
        # the profile's site file, also where a --configfile replaced the profile's
        overrides = with_site_file(snakemake_config, base_dirs)
        if not main_process:
            checked = spec_cache.read_specs(SPEC_CACHE, config_file, overrides, base_dirs)
        if checked is None:
            checked = _full_check(overrides, config_file, base_dirs, main_process)
        config, specs = checked
        sweep = Sweep(config, specs, base_dirs, main_process)
    except ConfigError as err:
        exit_with_error(err)
    missing = rule_values.missing_embedded_packages(specs)
    if missing:  # before any run: a plain `pip install .` has no torch
        exit_with_error(missing)
    snakemake_config.update(config)
    # sbatch reads a training job's "all of the node's memory" from here (launch.slurm).
    for name, value in SBATCH_ENVIRONMENT.items():
        environ.setdefault(name, value)
    if main_process:
        for line in sweep.warnings():
            print(f"llmbench: warning: {line}", file=sys.stderr)
    return sweep


def _full_check(
    snakemake_config: Mapping[str, Any],
    config_file: str,
    base_dirs: Sequence[str | Path],
    main_process: bool,
) -> spec_cache.Checked:
    # The schema and the catalog's rules (jsonschema and every catalog file): imported
    # only where the full check runs, not in a job that reads the main process's result.
    from llmbench.workflow.config_check import check_workflow_config

    def warn(line: str) -> None:
        print(f"llmbench: warning: {line}", file=sys.stderr)

    return check_workflow_config(
        snakemake_config,
        config_file,
        base_dirs,
        warn=warn if main_process else None,
        cache=SPEC_CACHE if main_process else None,
    )


class Sweep:
    """The checked config, its runs and every value a rule needs, as attributes (read
    when the rules are declared) and methods (Snakemake's callables)."""

    def __init__(
        self,
        config: dict[str, Any],
        specs: Sequence[RunSpec],
        base_dirs: Sequence[str | Path],
        main_process: bool,
    ) -> None:
        self.config = config
        self.runs = {spec.run_id: spec for spec in specs}
        self.main_process = main_process
        self.stage: str = config["stage_path"]
        self.groups = rule_values.run_groups(specs)
        self.images = image_imports(specs)  # .sqsh file name -> import
        self.venv_requirements = venv_requirements_path(config, base_dirs)
        self.venv_marker = venv_marker_path(self.stage)
        self.image_output = f"{self.stage}/{IMAGES_DIR}/{{sqsh}}"
        self.setup_local: bool = config["setup"]["run_on"] == "local"
        self.history: dict[str, Any] = config["history"]
        self.config_sha256 = config_sha256(config)
        self.preflight: PreflightSettings = resolve_preflight(
            config.get("preflight"), specs, list_nodes=LAUNCHERS[config["launcher"]].nodes
        )
        self.paths = PATHS
        self.preflight_exclude = PATHS.preflight_exclude
        self.preflight_fabric = PATHS.preflight_fabric
        self.infra_retries: int = config["failures"]["infra_retries"]
        self.reference_tolerance = float(config["reference"]["tolerance"])
        self._train_params: dict[str, dict[str, Any]] = {}
        self._train_resources: dict[tuple[str, int, str], dict[str, Any]] = {}

    def warnings(self) -> list[str]:
        """What the person starting the sweep should know before it runs."""
        lines = [self.preflight.note] if self.preflight.note else []
        if any(spec.variant == "ckpt-save" for spec in self.runs.values()):
            space = checkpoint_space_warning(self.runs.values(), free_bytes(self.stage))
            lines += [space] if space else []
        return lines

    def check_before_start(self) -> None:
        """A sweep about to run jobs (not a dry run, not "nothing to be done") stops with
        one line when its environment lacks what a launcher needs (a Run:ai secret) or
        results/ cannot be written, before the first job starts."""
        missing = missing_before_start(self.runs.values()) or not_writable([RESULTS])
        if missing:
            exit_with_error(missing)

    # -- what `rule all` asks for

    def all_outputs(self) -> list[str]:
        """Tables, pages, the result file, plots, and the history, preflight and telemetry
        outputs: every file the rules write for people and tools."""
        paths = self.paths
        outputs = [
            *(paths.runs_table, paths.runs_csv, paths.steps_table, paths.scaling_md),
            *(paths.page(name) for name in PAGES),
            paths.result,
            *(paths.scaling_plots.format(group=group) for group in self.groups),
        ]
        if self.history["add"]:
            outputs.append(paths.history_added)
        if self.history["path"]:
            outputs.append(paths.history_trends)
        if self.preflight.enabled:
            outputs += [paths.nodes_table, paths.page(NODES_PAGE)]
            if self.preflight.fabric:
                outputs.append(paths.preflight_fabric)
        outputs.append(paths.telemetry_table)
        outputs += [paths.telemetry_plot.format(group=group) for group in self.groups]
        return outputs

    # -- setup: image imports and the training venv

    def sqsh_constraint(self) -> str:
        return "|".join(map(re.escape, self.images)) or NOTHING

    def image_param(self, name: str) -> Callable[[Wildcards], str]:
        """The import's ``image`` or ``arch`` for the ``{sqsh}`` wildcard."""

        def param(wildcards: Wildcards) -> str:
            return str(getattr(self.images[wildcards.sqsh], name))

        return param

    def setup_resources(self) -> dict[str, Any]:
        """Setup jobs need a few cores and no GPU; a CPU partition where the site has one."""
        return slurm.setup_resources(self.config["setup"]["partition"])

    # -- the train rule

    def setup_inputs(self, wildcards: Wildcards) -> dict[str, str]:
        """The run's image (container: enroot), the training venv (framework workloads)
        and, for ckpt-load, the ckpt-save run whose checkpoint it restores."""
        spec = self.runs[wildcards.run]
        inputs = {}
        source = checkpoint_source(spec)
        if source in self.runs:
            inputs["saved_by"] = self.paths.record_of(source)
        imported = image_import(spec)
        if imported is not None:
            inputs["image"] = image_path(self.stage, imported)
        if needs_venv(spec):
            inputs["venv"] = self.venv_marker
        return inputs

    def preflight_inputs(self) -> dict[str, str]:
        """Train jobs wait for the gate: their Slurm resources exclude the nodes it
        rejected. Its output is named as a file, not through the checkpoint's ``get()``:
        when the gate (a checkpoint) finishes, Snakemake re-creates the jobs that depend on
        it, so their resources read its verdict either way, and a dry run does not build
        every train job twice (benchmarks/dry_run.py)."""
        if not self.preflight.enabled:
            return {}
        inputs = {"preflight": self.paths.preflight_exclude}
        if self.preflight.fabric:  # GPU clusters: the largest allocation's all-reduce too
            inputs["fabric"] = self.paths.preflight_fabric
        return inputs

    def train_params(self, wildcards: Wildcards) -> dict[str, Any]:
        """One params value, not three: Snakemake evaluates each several times per job."""
        run = wildcards.run
        if run not in self._train_params:
            spec = self.runs[run]
            self._train_params[run] = {
                "spec": spec.to_dict(),
                # Changes exactly when the reported attempt did not succeed
                # (job.attempts), so rerunning the same command redoes failed runs.
                "retry_of": retry_token(
                    self.paths.run_dir(run), self.config["failures"]["keep_failed"]
                ),
                "env": rule_values.launch_env(
                    spec, self.stage, self.config["master_addr"], self.config.get("hf_home")
                ),
                "telemetry": self.config["telemetry"],
            }
        return self._train_params[run]

    def train_threads(self) -> Any:
        """A platform's job only submits and waits (its ranks run remotely)."""
        threads = {
            run: 1 if is_platform(spec.launcher) else spec.gpus_per_node * spec.threads_per_rank
            for run, spec in self.runs.items()
        }
        return rule_values.per_run(threads, lambda run, attempt: threads[run])

    def train_bench(self) -> int:
        """profiles/default allows one ``bench`` job at a time so that local timings do not
        share cores; a platform's runs do not run here."""
        return 0 if all(is_platform(s.launcher) for s in self.runs.values()) else 1

    def _resources(self, run: str, attempt: int, exclude: str) -> dict[str, Any]:
        # Once per job try, not once per resource: a retry's node check queries Slurm.
        key = (run, attempt, exclude)
        if key not in self._train_resources:
            self._train_resources[key] = rule_values.train_resources(
                self.runs[run],
                Path(self.paths.run_dir(run)),
                attempt,
                self.config["slurm"],
                self.config["threads_per_rank"],
                exclude,
            )
        return self._train_resources[key]

    def train_resource(self, name: str) -> Any:
        """``slurm_extra`` changes on a retry (nodes to avoid) and with the preflight gate's
        verdict, so it is computed per try. The others are the first try's without
        exclusions. The main process folds a value every run shares into a constant;
        inside a job Snakemake asks for its one run only, so no table is built there."""
        if name == "slurm_extra":

            def of_try(run: str, attempt: int) -> Any:
                return self._resources(run, attempt, self.preflight_excluded())[name]

            return rule_values.per_run({}, of_try, varies=True)

        def first_try(run: str, attempt: int) -> Any:
            return self._resources(run, 1, "")[name]

        values = {run: first_try(run, 1) for run in self.runs} if self.main_process else {}
        return rule_values.per_run(values, first_try)

    @staticmethod
    def try_number(wildcards: Wildcards, attempt: int) -> int:
        """Snakemake hands its try counter only to resource functions; the train script
        reads it back to tell a first try from a retry."""
        return attempt

    # -- aggregate, tables, plots

    def run_records(self, wildcards: Wildcards) -> list[str]:
        """A callable, not a list in the rule: built with the job that needs it, not each
        time a job reads the Snakefile."""
        return [self.paths.record_of(run) for run in self.runs]

    def run_dirs(self, wildcards: Wildcards) -> list[str]:
        return [self.paths.run_dir(run) for run in self.runs]

    def peak_inputs(self, wildcards: Wildcards) -> dict[str, str]:
        needs_cpu = any(device(s.gpu_type).peak == "measured" for s in self.runs.values())
        return {"cpu_peak": self.paths.cpu_peak} if needs_cpu else {}

    def reference_input(self, wildcards: Wildcards) -> dict[str, str]:
        path = self.config["reference"]["file"]
        return {"reference": path} if path else {}

    def aggregate_preflight_input(self, wildcards: Wildcards) -> dict[str, str]:
        """The nodes table where preflight runs: the cluster's fabric where the site names
        none, and node health for "Why slower"."""
        return {"nodes": self.paths.nodes_table} if self.preflight.enabled else {}

    def group_runs(self, wildcards: Wildcards) -> list[str]:
        return self.groups[wildcards.group]

    def table_labels(self, table: str) -> dict[str, str]:
        return {**rule_values.label_values(self.runs.values()), "content": table}

    def plot_labels(self, wildcards: Wildcards) -> dict[str, str]:
        specs = [self.runs[run] for run in self.groups[wildcards.group]]
        return {**rule_values.label_values(specs), "content": wildcards.name.replace("_", " ")}

    def telemetry_plot_labels(self, wildcards: Wildcards) -> dict[str, str]:
        specs = [self.runs[run] for run in self.groups[wildcards.group]]
        return {**rule_values.label_values(specs), "content": "telemetry"}

    # -- history

    def history_trend_inputs(self, wildcards: Wildcards) -> dict[str, str]:
        inputs = {"runs": self.paths.runs_table, "sweep": self.paths.sweep}
        if self.history["add"]:  # the trends then include this sweep as stored
            inputs["added"] = self.paths.history_added
        return {**inputs, **self.reference_input(wildcards)}

    def trend_labels(self, wildcards: Wildcards) -> dict[str, str]:
        """A trend is named after its configuration: its perf run's id without the variant
        (``history.trends.key_name``); that run of this sweep gives the labels."""
        spec = self.runs[f"{wildcards.name}_perf"]
        return {
            **rule_values.label_values([spec]),
            "content": "step time over sweeps",
        }

    # -- preflight

    def preflight_excluded(self) -> str:
        """Nodes the gate excluded (comma-separated; empty before it ran or without it)."""
        if not self.preflight.enabled or not os.path.exists(self.paths.preflight_exclude):
            return ""
        return ",".join(read_excluded(self.paths.preflight_exclude))

    def preflight_node_results(self) -> list[str]:
        return [self.paths.preflight_node.format(node=node) for node in self.preflight.nodes]

    def preflight_node_constraint(self) -> str:
        return "|".join(map(re.escape, self.preflight.nodes)) or NOTHING

    def preflight_node_threads(self) -> int:
        return 1 if device(self.preflight.gpu_type).has_gpus else self.preflight.ranks

    def preflight_node_resource(self, name: str) -> Callable[[Wildcards], Any]:
        """One node's check runs on that node: CPU ranks, or its GPUs."""
        values = slurm.node_check_resources(
            self.preflight.ranks, not device(self.preflight.gpu_type).has_gpus
        )

        def resource(wildcards: Wildcards) -> Any:
            if name == "slurm_extra":
                return slurm.node_check_extra(wildcards.node)
            return values[name]

        return resource

    def fabric_resources(self) -> dict[str, Any]:
        """The largest allocation's all-reduce: as many nodes and GPUs as its biggest run."""
        return slurm.fabric_resources(self.preflight.nodes_needed, self.preflight.ranks)

    @staticmethod
    def fabric_extra(wildcards: Wildcards, input: Any) -> str:
        """The fabric test's allocation leaves out the nodes the gate excluded."""
        return slurm.exclude_extra(read_excluded(input.exclude))

    def _preflight_image_file(self) -> str | None:
        """The imported .sqsh of the sweep's largest enroot run (nccl-tests run in it)."""
        specs = [spec for spec in self.runs.values() if image_import(spec) is not None]
        if not specs:
            return None
        largest = max(specs, key=lambda spec: (spec.nodes, spec.run_id))
        imported = image_import(largest)
        return image_path(self.stage, imported) if imported else None

    def preflight_image(self) -> str:
        path = self._preflight_image_file()
        return str(Path(path).resolve()) if path else ""

    def preflight_image_input(self, wildcards: Wildcards) -> dict[str, str]:
        path = self._preflight_image_file()
        return {"image": path} if path else {}


def read_excluded(path: str | Path) -> list[str]:
    """The nodes the preflight gate excluded (its ``exclude.json``)."""
    with open(path) as fh:
        return list(json.load(fh)["exclude"])
