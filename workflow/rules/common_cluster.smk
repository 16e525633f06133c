# Preflight and telemetry: which nodes are checked, what the train jobs exclude, and the
# sweep-wide telemetry outputs (docs/preflight.md, docs/telemetry.md).
import json

from llmbench.spec.preflight_settings import resolve_preflight

try:
    PREFLIGHT = resolve_preflight(
        CONFIG.get("preflight"), RUNS.values(), CONFIG["launcher"]
    )
except ConfigError as err:
    sys.exit(f"llmbench: error: {err}")
PREFLIGHT_EXCLUDE = "results/preflight/exclude.json"
PREFLIGHT_FABRIC = "results/preflight/fabric.json"


def get_preflight_inputs():
    """Train jobs wait for the gate: their Slurm resources exclude the nodes it rejected.
    Its output is named as a file, not through `checkpoints.preflight_gate.get()`: when
    the gate (a checkpoint) finishes, Snakemake re-creates the jobs that depend on its
    output, so their resources read its verdict either way, and a dry run does not build
    every train job twice (benchmarks/dry_run.py)."""
    if not PREFLIGHT.enabled:
        return {}
    inputs = {"preflight": PREFLIGHT_EXCLUDE}
    if PREFLIGHT.fabric:  # GPU clusters: the largest allocation's all-reduce too
        inputs["fabric"] = PREFLIGHT_FABRIC
    return inputs


def preflight_excluded():
    """Nodes the gate excluded (comma-separated; empty before it ran or without it)."""
    if not PREFLIGHT.enabled or not os.path.exists(PREFLIGHT_EXCLUDE):
        return ""
    with open(PREFLIGHT_EXCLUDE) as fh:
        return ",".join(json.load(fh)["exclude"])


def get_aggregate_preflight_input(wildcards):
    """The aggregate job reads the preflight nodes table where preflight runs: the
    cluster's fabric where the site names none, and node health for "Why slower"."""
    return {"nodes": "results/tables/nodes.parquet"} if PREFLIGHT.enabled else {}


def get_fabric_extra(wildcards, input):
    """The fabric test's allocation leaves out the nodes the gate excluded."""
    with open(input.exclude) as fh:
        excluded = json.load(fh)["exclude"]
    return f"--exclude={','.join(excluded)}" if excluded else ""


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


def _preflight_image_file():
    """The imported .sqsh of the sweep's largest enroot run (nccl-tests run in it)."""
    specs = [spec for spec in RUNS.values() if image_import(spec) is not None]
    if not specs:
        return None
    largest = max(specs, key=lambda spec: (spec.nodes, spec.run_id))
    return image_path(STAGE, image_import(largest))


def get_preflight_image():
    path = _preflight_image_file()
    return str(Path(path).resolve()) if path else ""


def get_preflight_image_input(wildcards):
    path = _preflight_image_file()
    return {"image": path} if path else {}


def get_preflight_outputs():
    if not PREFLIGHT.enabled:
        return []
    fabric = [PREFLIGHT_FABRIC] if PREFLIGHT.fabric else []
    return ["results/tables/nodes.parquet", "results/tables/nodes.html", *fabric]


def get_telemetry_outputs():
    """The sweep-wide telemetry table and one telemetry plot per run group."""
    return [
        "results/tables/telemetry.parquet",
        *(f"results/plots/telemetry/{group}.svg" for group in GROUPS),
    ]


def get_telemetry_plot_labels(wildcards):
    specs = [RUNS[run] for run in GROUPS[wildcards.group]]
    return {**wiring.label_values(specs), "content": "telemetry"}
