# Preflight and telemetry: which nodes are checked, what the train jobs exclude, and the
# sweep-wide telemetry outputs (docs/preflight.md, docs/telemetry.md).
import json

from llmbench.preflight.settings import resolve_preflight

try:
    PREFLIGHT = resolve_preflight(
        CONFIG.get("preflight"), RUNS.values(), CONFIG["launcher"]
    )
except ConfigError as err:
    sys.exit(f"llmbench: error: {err}")
PREFLIGHT_EXCLUDE = "results/preflight/exclude.json"


def get_preflight_input(wildcards):
    """Train jobs wait for the gate (a checkpoint: their Slurm resources exclude the
    nodes it rejected, known only once it ran)."""
    if not PREFLIGHT.enabled:
        return {}
    return {"preflight": checkpoints.preflight_gate.get().output.exclude}


def preflight_excluded():
    """Nodes the gate excluded (comma-separated; empty before it ran or without it)."""
    if not PREFLIGHT.enabled or not os.path.exists(PREFLIGHT_EXCLUDE):
        return ""
    with open(PREFLIGHT_EXCLUDE) as fh:
        return ",".join(json.load(fh)["exclude"])


def get_preflight_node_resources(name):
    def resource(wildcards):
        values = {
            "nodes": 1,
            "tasks": 1,
            "cpus_per_task": PREFLIGHT.ranks if PREFLIGHT.gpu_type == "cpu" else 8,
            "gres": "" if PREFLIGHT.gpu_type == "cpu" else f"gpu:{PREFLIGHT.ranks}",
            "runtime": 30,
            "slurm_extra": f"--nodelist={wildcards.node}",
        }
        return values[name]

    return resource


def get_preflight_image():
    images = {spec.image for spec in RUNS.values() if spec.container == "enroot"}
    return sorted(images)[0] if images else ""


def get_preflight_outputs():
    if not PREFLIGHT.enabled:
        return []
    return ["results/tables/nodes.parquet", "results/tables/nodes.html"]


def get_telemetry_outputs():
    """The sweep-wide telemetry table and one telemetry plot per run group."""
    return [
        "results/tables/telemetry.parquet",
        *(f"results/plots/telemetry/{group}.svg" for group in GROUPS),
    ]


def get_telemetry_plot_labels(wildcards):
    specs = [RUNS[run] for run in GROUPS[wildcards.group]]
    return {**_label_values(specs), "content": "telemetry"}
