"""The paths of a sweep's ``results/`` folder, once: the rules' outputs, ``Sweep``, the
aggregate and the commands read them here (docs/results.md).

Names without the ``results/`` prefix are relative to the results folder (how the
result file and the "Why slower" evidence name them); ``ResultsPaths`` puts a folder in
front (the workflow's ``results/``). Standard library only, like
``llmbench.core.run_folder``, whose names a run folder holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmbench.core import run_folder

RESULTS = "results"
RUNS = "runs"
TABLES = "tables"
PLOTS = "plots"
LOGS = "logs"
RENDER = "render"
"""``llmbench render``'s default folder."""

SWEEP = f"{TABLES}/sweep.json"
RUNS_TABLE = f"{TABLES}/runs.parquet"
RUNS_CSV = f"{TABLES}/runs.csv"
STEPS_TABLE = f"{TABLES}/steps.parquet"
SCALING_MD = f"{TABLES}/scaling.md"
TELEMETRY_TABLE = f"{TABLES}/telemetry.parquet"
NODES_TABLE = f"{TABLES}/nodes.parquet"
RESULT = "result.json"
"""The sweep's stable machine-readable result."""
PAGES = ("overview", "runs", "scaling", "references", "failures", "profiles", "why_slower")
"""The aggregate's HTML pages, ``tables/<page>.html``."""
NODES_PAGE = "nodes"
CPU_PEAK = "calibration/cpu_peak.json"
HISTORY_ADDED = "history/added.json"
HISTORY_TRENDS = "history/trends"
PREFLIGHT_NODE = "preflight/nodes/{node}.json"
PREFLIGHT_EXCLUDE = "preflight/exclude.json"
PREFLIGHT_FABRIC = "preflight/fabric.json"
SCALING_PLOTS = f"{PLOTS}/{{group}}"
TELEMETRY_PLOT = f"{PLOTS}/telemetry/{{group}}.svg"


def page(name: str) -> str:
    """An HTML page of the tables folder."""
    return f"{TABLES}/{name}.html"


def run_dir(run: str) -> str:
    """A run's folder (``llmbench.core.run_folder`` names its files)."""
    return f"{RUNS}/{run}"


def run_file(run: str, name: str) -> str:
    return f"{run_dir(run)}/{name}"


RUN_FILES = {
    "run_record": run_folder.RECORD,
    "run_summary": run_folder.SUMMARY,
    "run_steps": run_folder.STEPS,
    "run_telemetry": run_folder.TELEMETRY,
    "run_energy": run_folder.ENERGY,
}
"""What the train rule declares of each run folder (``{run}`` a wildcard)."""


@dataclass(frozen=True)
class ResultsPaths:
    """The paths above under ``root`` (``results/``), as the workflow's rules name them,
    in lower case; ``{run}``, ``{group}`` and ``{node}`` stay wildcards."""

    root: str
    sweep: str
    runs_table: str
    runs_csv: str
    steps_table: str
    scaling_md: str
    telemetry_table: str
    nodes_table: str
    result: str
    cpu_peak: str
    history_added: str
    history_trends: str
    preflight_node: str
    preflight_exclude: str
    preflight_fabric: str
    scaling_plots: str
    telemetry_plot: str
    run_record: str
    run_summary: str
    run_steps: str
    run_telemetry: str
    run_energy: str

    def path(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def page(self, name: str) -> str:
        return self.path(page(name))

    def run_dir(self, run: str) -> str:
        return self.path(run_dir(run))

    def record_of(self, run: str) -> str:
        return self.path(run_file(run, run_folder.RECORD))

    def log(self, name: str) -> str:
        """A rule's log, ``logs/<name>.log``."""
        return self.path(f"{LOGS}/{name}.log")


def results_paths(root: str = RESULTS) -> ResultsPaths:
    relative = {
        "sweep": SWEEP, "runs_table": RUNS_TABLE, "runs_csv": RUNS_CSV,
        "steps_table": STEPS_TABLE, "scaling_md": SCALING_MD,
        "telemetry_table": TELEMETRY_TABLE, "nodes_table": NODES_TABLE, "result": RESULT,
        "cpu_peak": CPU_PEAK, "history_added": HISTORY_ADDED, "history_trends": HISTORY_TRENDS,
        "preflight_node": PREFLIGHT_NODE, "preflight_exclude": PREFLIGHT_EXCLUDE,
        "preflight_fabric": PREFLIGHT_FABRIC, "scaling_plots": SCALING_PLOTS,
        "telemetry_plot": TELEMETRY_PLOT,
        **{name: run_file("{run}", file) for name, file in RUN_FILES.items()},
    }  # fmt: skip
    return ResultsPaths(root=root, **{name: f"{root}/{path}" for name, path in relative.items()})
