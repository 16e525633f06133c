"""What the platform launchers (``kubernetes``, ``runai``) share about their pods.

Both run one pod per node that writes the run spec and starts torchrun over the node's
ranks (``node_command``), with the same environment (``pod_environment``), the same
profile PVCs (``platform_site.parse_pvcs``), one workload name per attempt, and a submit
script that copies the rank-0 pod's log and writes ``platform.json`` (``write_record``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmbench.core.runspec import RunSpec
from llmbench.core.site_fit import needs_hf_home
from llmbench.launch.entry import SPEC_FILE, entry_module, omp_threads, rank_environment
from llmbench.launch.shell import join

SPEC_ENV = "LLMBENCH_RUN_SPEC"
"""The run spec travels in the workload (this env value); the pod writes it to a file."""


def workload_name(spec: RunSpec, attempt: int) -> str:
    """A DNS-1035 label (<= 63 chars): lower case, '-' only; unique per run and attempt."""
    base = spec.run_id.replace("_", "-").replace(".", "-")
    suffix = f"-a{attempt}"
    return (base[: 63 - len(suffix)].rstrip("-") + suffix).lower()


def node_command(spec: RunSpec, llmbench_src: str, launcher: str) -> list[str]:
    """What each node's container runs: write the spec, then torchrun over the node's
    ranks. ``launcher`` is the torchrun part, shell words already quoted: the Trainer
    sets PET_* variables that torchrun reads; a PyTorchJob sets MASTER_ADDR, MASTER_PORT
    and RANK (the pod index). Every value from the profile is quoted (``join``)."""
    lines = [
        "set -euo pipefail",
        'cd "$(mktemp -d)"',
        f'printf "%s" "${SPEC_ENV}" > {SPEC_FILE}',
    ]
    threads = omp_threads(spec)
    if threads is not None:
        lines.append(f"export OMP_NUM_THREADS={threads}")
    if llmbench_src:
        lines.append(f'export PYTHONPATH={join([llmbench_src])}"${{PYTHONPATH:+:$PYTHONPATH}}"')
    lines.append(f"exec {launcher} {join(['-m', entry_module(spec), '--spec', SPEC_FILE])}")
    script = "\n".join(lines)
    return ["bash", "-c", script]


def explicit_torchrun(spec: RunSpec) -> str:
    """torchrun for a PyTorch operator's pods: MASTER_ADDR, MASTER_PORT and RANK (the pod
    index) come from the operator."""
    head = ["python3", "-m", "torch.distributed.run", f"--nnodes={spec.nodes}"]
    head.append(f"--nproc-per-node={spec.gpus_per_node}")
    node = ' --node-rank="$RANK" --master-addr="$MASTER_ADDR" --master-port="$MASTER_PORT"'
    return join(head) + node


def spec_json(spec: RunSpec) -> str:
    return json.dumps(spec.to_dict(), sort_keys=True, separators=(",", ":"))


def pod_environment(spec: RunSpec, hf_home: str = "") -> list[dict[str, str]]:
    """The container's environment: the run spec, then the reference's environment for
    the ranks (the same list srun's ranks get, ``rank_environment``), and the site's
    ``hf_home`` as HF_HOME where the recipe reads the Hugging Face cache offline, as srun
    passes it (the config check keeps it on one of the pods' volumes)."""
    env = [(SPEC_ENV, spec_json(spec)), *rank_environment(spec)]
    if hf_home and needs_hf_home(spec):
        env.append(("HF_HOME", hf_home))
    return [{"name": name, "value": value} for name, value in env]


def pod_log(core: Any, name: str, namespace: str, **options: Any) -> str:
    """A pod's whole log as text: the raw response body, decoded here (the client's own
    deserialisation of a log turns bytes into their repr on some versions)."""
    response = core.read_namespaced_pod_log(name, namespace, _preload_content=False, **options)
    return response.data.decode("utf-8", "replace")


def write_record(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(dict(data), indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
