"""The reference's launch settings as data (``parity.yaml``), resolved for one run.

``resolve_parity`` picks the settings of the run's workload family and spec document whose
conditions hold for the run's GPU type, size, dtype, scale and parallelism, and turns the
symbolic values (``tp_gt_1``, ``rack``, ``xla_flags`` ...) into plain ones. The result is a
JSON-able mapping recorded in ``run_spec.json``; launch.sh, the Slurm resources and the
entry points read it through ``settings``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmbench.errors import ConfigError
from llmbench.spec.catalog.load import parse_package_yaml
from llmbench.spec.runspec import parity_settings

KINDS = ("sbatch", "srun", "prefix", "node", "env", "recipe", "tokenizer", "logging")
_WHEN_KEYS = (
    "gpu_type", "size", "dtype", "gpus_per_node", "min", "any_min", "nodes_min", "nodes_max",
    "cuda_graphs", "fsdp",
)  # fmt: skip

XLA_BASE_FLAGS = (
    "--xla_gpu_enable_triton_gemm=false",
    "--xla_gpu_graph_level=0",
    "--xla_gpu_enable_highest_priority_async_stream=true",
    "--xla_gpu_enable_pipelined_all_gather=true",
    "--xla_gpu_enable_pipelined_reduce_scatter=true",
    "--xla_gpu_enable_pipelined_all_reduce=true",
    "--xla_gpu_enable_while_loop_double_buffering=true",
    "--xla_gpu_enable_triton_softmax_fusion=false",
    "--xla_gpu_enable_all_gather_combine_by_dim=false",
    "--xla_gpu_enable_reduce_scatter_combine_by_dim=false",
    "--xla_disable_hlo_passes=rematerialization",
    "--xla_gpu_enable_latency_hiding_scheduler=true",
)
"""MaxText perf run's XLA flags (DGXC:maxtext/configure.sh@v25.01 L107-121, L204-206),
without the HLO dump and PGLE file flags (docs/parity.md)."""
XLA_COMBINE_BASE_BYTES = 8 * 1073741824
"""Collective combine thresholds are 8 GiB divided per collective (configure.sh L95-98)."""


@functools.cache
def _families() -> dict[str, Any]:
    raw = parse_package_yaml((Path(__file__).with_name("parity.yaml")).read_text())
    families = raw["families"]
    for workload, documents in families.items():
        for document, entry in documents.items():
            for item in entry["settings"]:
                where = f"parity.yaml: {workload}/{document}/{item.get('name')}"
                if item.get("kind") not in KINDS or "source" not in item:
                    raise ConfigError(f"{where}: needs a kind ({', '.join(KINDS)}) and a source")
                for key in (*item.get("when", {}), *item.get("unless", {})):
                    if key not in _WHEN_KEYS:
                        raise ConfigError(f"{where}: when key {key!r}; allowed: {_WHEN_KEYS}")
    return families


def families() -> dict[str, Any]:
    """Workload -> spec document -> {reference, settings, differences} (a copy-free view)."""
    return _families()


def _holds(when: Mapping[str, Any], run: Mapping[str, Any]) -> bool:
    p = run["parallelism"]
    for key in ("gpu_type", "size", "dtype", "gpus_per_node"):
        if key in when and run[key] not in when[key]:
            return False
    if any((p.get(k) or 1) < v for k, v in when.get("min", {}).items()):
        return False
    if "any_min" in when and not any((p.get(k) or 1) >= v for k, v in when["any_min"].items()):
        return False
    if "nodes_min" in when and run["nodes"] < when["nodes_min"]:
        return False
    if "nodes_max" in when and run["nodes"] > when["nodes_max"]:
        return False
    return all(bool(p.get(k)) == when[k] for k in ("cuda_graphs", "fsdp") if k in when)


def _applies(item: Mapping[str, Any], run: Mapping[str, Any]) -> bool:
    if "when" in item and not _holds(item["when"], run):
        return False
    return not ("unless" in item and _holds(item["unless"], run))


def rack_segment(nodes: int) -> int:
    """Nodes per ``--segment`` on 4-GPU NVL72 nodes past one rack: the largest divisor of
    ``nodes`` up to 18 (NeMo:scripts/performance/executors.py@1f422a1 L111-119)."""
    return next(c for c in range(18, 0, -1) if nodes % c == 0)


def xla_flags(divisors: Mapping[str, int]) -> str:
    """The MaxText perf run's XLA_FLAGS for the run's combine divisors."""
    combine = [
        f"--xla_gpu_{name}_combine_threshold_bytes={XLA_COMBINE_BASE_BYTES // divisors[name]}"
        for name in ("all_reduce", "all_gather", "reduce_scatter")
    ]
    return " ".join([*XLA_BASE_FLAGS[:3], *combine, *XLA_BASE_FLAGS[3:]])


def _value(value: Any, run: Mapping[str, Any], picked: Mapping[str, Any]) -> Any:
    p = run["parallelism"]
    tp, pp, vp = p.get("tp") or 1, p.get("pp") or 1, p.get("vp") or 1
    symbols = {
        "tp_gt_1": lambda: tp > 1,
        "dp_pp_vp_gt_1": lambda: (p.get("dp") or 1) > 1 and pp > 1 and vp > 1,
        "row_cuda_graphs": lambda: bool(p.get("cuda_graphs")),
        "same_as_cuda_graph": lambda: bool(picked.get(("recipe", "model.enable_cuda_graph"))),
        "rack": lambda: rack_segment(run["nodes"]),
        "nodes": lambda: run["nodes"],
        "xla_flags": lambda: xla_flags(picked[("recipe", "xla_combine_divisors")]),
    }
    if isinstance(value, str) and value in symbols:
        return symbols[value]()
    return value


def resolve_parity(
    workload: str,
    document: str,
    *,
    size: str,
    dtype: str,
    gpu_type: str,
    nodes: int,
    gpus_per_node: int,
    parallelism: Mapping[str, Any],
) -> dict[str, Any]:
    """The run's reference settings (kind, name, value, source) and the deliberate
    differences; empty for a workload the catalog has no reference for."""
    entry = _families().get(workload, {}).get(document)
    if entry is None:
        return {}
    run = {
        "size": size, "dtype": dtype, "gpu_type": gpu_type, "nodes": nodes,
        "gpus_per_node": gpus_per_node, "parallelism": dict(parallelism),
    }  # fmt: skip
    picked: dict[tuple[str, str], Any] = {}
    settings = []
    # Symbolic values may refer to others (XLA flags to the divisors): resolve in order,
    # literal values first.
    chosen = [item for item in entry["settings"] if _applies(item, run)]
    for item in sorted(chosen, key=lambda i: isinstance(i["value"], str)):
        value = _value(item["value"], run, picked)
        picked[(item["kind"], item["name"])] = value
    for item in chosen:
        value = picked[(item["kind"], item["name"])]
        settings.append(
            {"kind": item["kind"], "name": item["name"], "value": value, "source": item["source"]}
        )
    return {
        "family": workload,
        "document": document,
        "reference": entry["reference"],
        "settings": settings,
        "differences": list(entry.get("differences", [])),
    }


def built_vocab(parity: Mapping[str, Any], tp: int) -> int | None:
    """The vocabulary the model is really built with (embedding and output rows).

    NeMo 2: a ``NullTokenizer(n)`` reports ``n + 1`` tokens (the end-of-document id), and
    the model pads that to a multiple of ``make_vocab_size_divisible_by x TP``
    (nemo/lightning/base.py ``get_vocab_size``). Elsewhere the model config's own size.
    """
    tok = parity_settings(parity, "tokenizer")
    if "null_tokenizer" in tok:
        spec = tok["null_tokenizer"]
        size = int(spec["vocab_size"]) + 1
        multiple = int(spec.get("divisible_by") or 1) * (tp if spec.get("times_tp") else 1)
        return -(-size // multiple) * multiple
    if "model_vocab" in tok:
        return int(tok["model_vocab"]["vocab_size"])
    return None
