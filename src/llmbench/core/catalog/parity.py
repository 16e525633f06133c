"""The reference's launch settings as data (``parity.yaml``), resolved for one run.

``resolve_parity`` picks the settings of the run's workload family and spec document whose
conditions hold for the run's GPU type, size, dtype, scale, launcher and parallelism, keeps
those its image's framework versions have (``images.yaml``), and turns the symbolic values
(``tp_gt_1``, ``rack``, ``xla_flags`` ...) into plain ones. The result is the run's
``ParitySettings`` (``llmbench.core.parity_settings``), recorded in ``run_spec.json``;
launch.sh, the platforms' manifests, the Slurm resources and the entry points read its
settings by kind (``.env``, ``.sbatch`` ...).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmbench.core.catalog.load import parse_package_yaml
from llmbench.core.parity_settings import KINDS, NO_PARITY, ParitySettings, Setting, Stack
from llmbench.core.runspec import meets_requirement
from llmbench.errors import ConfigError

_WHEN_KEYS = (
    "gpu_type", "size", "dtype", "precision", "gpus_per_node", "launcher", "min", "any_min",
    "nodes_min", "nodes_max", "gpus", "gpus_min", "cuda_graphs", "fsdp",
)  # fmt: skip
REPOS = {
    "DGXC": "NVIDIA/dgxc-benchmarking",
    "NeMo": "NVIDIA/NeMo",
    "MB": "NVIDIA-NeMo/Megatron-Bridge",
    "MCore": "NVIDIA/Megatron-LM",
    "MT": "AI-Hypercomputer/maxtext",
    "Run": "NVIDIA-NeMo/Run",
    "EP": "NVIDIA/exemplar-performance",
}
"""Short repository names of the citations."""
CITATION = re.compile(
    r"(?P<repo>[A-Za-z]+):(?P<path>[\w.+-]+(?:/[\w.+-]+)*)@(?P<ref>[\w.-]+)"
    r"#(?P<lines>L\d+(?:-\d+)?(?:,L\d+(?:-\d+)?)*)"
)
"""``REPO:path@ref#Lx-y[,Lz]``: a file at a tag or commit, and the lines that say it."""

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
"""MaxText perf run's XLA flags (DGXC:maxtext/configure.sh@v24.11.1#L107-120,L204),
without the HLO dump and PGLE file flags (docs/parity.md)."""
XLA_COMBINE_BASE_BYTES = 8 * 1073741824
"""Collective combine thresholds are 8 GiB divided per collective (configure.sh#L96-99)."""


def _check_sources(where: str, sources: Any) -> None:
    if not isinstance(sources, list) or not sources:
        raise ConfigError(f"{where}: source must be a list of citations")
    for source in sources:
        match = CITATION.fullmatch(str(source))
        if match is None or match["repo"] not in REPOS:
            raise ConfigError(
                f"{where}: source {source!r}; allowed: REPO:path@ref#Lx-y with REPO one of "
                f"{', '.join(REPOS)}"
            )


def _check_conditions(where: str, item: Mapping[str, Any]) -> None:
    for key in (*item.get("when", {}), *item.get("unless", {})):
        if key not in _WHEN_KEYS:
            raise ConfigError(f"{where}: when key {key!r}; allowed: {_WHEN_KEYS}")
    for name, requirement in item.get("requires", {}).items():
        if not re.fullmatch(r"(>=|<)\d+(\.\d+)*", str(requirement)):
            raise ConfigError(f"{where}: requires {name}: {requirement!r}; allowed: >=X.Y or <X.Y")


def _check_item(where: str, item: Mapping[str, Any]) -> None:
    if item.get("kind") not in KINDS or not item.get("supports"):
        raise ConfigError(f"{where}: needs a kind ({', '.join(KINDS)}) and supports")
    _check_sources(where, item.get("source"))
    _check_conditions(where, item)
    addition = item.get("addition")
    if addition is not None and not (
        isinstance(addition, dict) and addition.get("reference") and addition.get("reason")
    ):
        raise ConfigError(f"{where}: addition needs the reference's value and llmbench's reason")


@functools.cache
def _data() -> dict[str, Any]:
    raw = parse_package_yaml((Path(__file__).with_name("parity.yaml")).read_text(), "parity.yaml")
    for workload, documents in raw["families"].items():
        for document, entry in documents.items():
            for image in entry.get("images", []):
                where = f"parity.yaml: {workload}/{document}/images/{image.get('ref')}"
                _check_sources(where, image.get("source"))
                _check_conditions(where, image)
            for item in entry["settings"]:
                _check_item(f"parity.yaml: {workload}/{document}/{item.get('name')}", item)
            for item in entry.get("differences", []):
                _check_sources(f"parity.yaml: {workload}/{document}/{item['name']}", item["source"])
    for item in raw["additions"]:
        if not str(item.get("reason", "")).startswith("llmbench's addition"):
            raise ConfigError(f"parity.yaml: additions/{item.get('name')}: reason must say "
                              "\"llmbench's addition\" and why")  # fmt: skip
    return raw


def _families() -> dict[str, Any]:
    return _data()["families"]


def additions() -> list[dict[str, Any]]:
    """What llmbench adds to every reference launch (``parity.yaml`` ``additions``): no
    reference has it, so no citation; each with its reason."""
    return list(_data()["additions"])


def families() -> dict[str, Any]:
    """Workload -> spec document -> {reference, images, settings, differences} (a
    copy-free view)."""
    return _families()


@functools.cache
def image_stacks() -> dict[str, Any]:
    """Image reference -> {versions, source, basis} (``images.yaml``)."""
    raw = parse_package_yaml((Path(__file__).with_name("images.yaml")).read_text(), "images.yaml")
    for ref, entry in raw["images"].items():
        _check_sources(f"images.yaml: {ref}", entry.get("source"))
    return raw["images"]


def image_versions(image: str) -> dict[str, str] | None:
    """The framework versions ``image`` carries, None when the data does not know it.
    enroot's ``host#namespace/name:tag`` names the same image as ``host/namespace/name:tag``."""
    entry = image_stacks().get(image.replace("#", "/", 1))
    return dict(entry["versions"]) if entry else None


def _holds(when: Mapping[str, Any], run: Mapping[str, Any]) -> bool:
    p = run["parallelism"]
    for key in ("gpu_type", "size", "dtype", "precision", "gpus_per_node", "launcher"):
        if key in when and run.get(key) not in when[key]:
            return False
    if "gpus" in when or "gpus_min" in when:
        gpus = run["nodes"] * run["gpus_per_node"]
        if gpus not in when.get("gpus", [gpus]) or gpus < when.get("gpus_min", 0):
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


def _stack_allows(item: Mapping[str, Any], versions: Mapping[str, str] | None) -> bool:
    """False when the image's known versions lack what the setting ``requires``; an image
    of unknown versions keeps it (the entry point decides in the container)."""
    if versions is None or "requires" not in item:
        return True
    return all(
        name in versions and meets_requirement(versions[name], requirement)
        for name, requirement in item.get("requires", {}).items()
    )


def reference_image(workload: str, document: str, gpu_type: str) -> str | None:
    """The image the reference runs the document's workload in on ``gpu_type``."""
    entry = _families().get(workload, {}).get(document, {})
    run = {"gpu_type": gpu_type, "parallelism": {}}
    return next((i["ref"] for i in entry.get("images", []) if _applies(i, run)), None)


def rack_segment(nodes: int) -> int:
    """Nodes per ``--segment`` on 4-GPU NVL72 nodes past one rack: the largest divisor of
    ``nodes`` up to 18 (MB:scripts/performance/utils/executors.py@f23d790#L115-126)."""
    return next(c for c in range(18, 0, -1) if nodes % c == 0)


def xla_flags(divisors: Mapping[str, int]) -> str:
    """The MaxText perf run's XLA_FLAGS for the run's combine divisors."""
    combine = [
        f"--xla_gpu_{name}_combine_threshold_bytes={XLA_COMBINE_BASE_BYTES // divisors[name]}"
        for name in ("all_reduce", "all_gather", "reduce_scatter")
    ]
    return " ".join([*XLA_BASE_FLAGS[:3], *combine, *XLA_BASE_FLAGS[3:]])


SYMBOLS = frozenset(
    {"tp_gt_1", "dp_pp_vp_gt_1", "row_cuda_graphs", "same_as_cuda_graph", "rack", "nodes",
     "xla_flags", "ep", "ep_up_to_8"}
)  # fmt: skip
"""Values ``_value`` computes for the run; every other value is literal."""


def _value(value: Any, run: Mapping[str, Any], picked: Mapping[str, Any]) -> Any:
    if not isinstance(value, str) or value not in SYMBOLS:
        return value
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
        # HybridEP ranks per NVLink domain (MB:scripts/performance/perf_plugins.py@b50da4c
        # #L383-393): EP on NVL72, at most 8 on 8-GPU nodes
        "ep": lambda: str(p.get("ep") or 1),
        "ep_up_to_8": lambda: str(min(8, p.get("ep") or 1)),
    }
    return symbols[value]()


def _stack(image: str, reference: str | None, in_image: bool) -> Stack:
    """Which software the ranks run: the image, the reference's, whether they are the same
    (False where the ranks run in a Python environment instead of an image) and the
    image's framework versions (empty when unknown)."""
    versions = image_versions(image) if in_image else None
    return Stack.from_dict(
        {
            "image": image if in_image else "",
            "reference_image": reference or "",
            "reference_stack": in_image and image.replace("#", "/", 1) == reference,
            "versions": versions or {},
        }
    )


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
    precision: str = "",
    launcher: str = "srun",
    image: str = "",
    in_image: bool = True,
    telemetry: bool = True,
) -> ParitySettings:
    """The run's reference settings (kind, name, value, source, and ``requires``,
    ``unverified`` or ``addition`` where the data has them), the image it runs in against
    the reference's (``stack``) and the deliberate differences, llmbench's additions among
    them; empty for a workload the catalog has no reference for. ``in_image``: the ranks
    run in ``image`` (a container or a platform's pod), not in a Python environment of
    unknown versions; ``telemetry``: the config samples telemetry beside the ranks."""
    entry = _families().get(workload, {}).get(document)
    if entry is None:
        return NO_PARITY
    run = {
        "size": size, "dtype": dtype, "precision": precision, "gpu_type": gpu_type,
        "nodes": nodes, "gpus_per_node": gpus_per_node, "parallelism": dict(parallelism),
        "launcher": launcher, "telemetry": telemetry,
    }  # fmt: skip
    stack = _stack(image, reference_image(workload, document, gpu_type), in_image)
    versions = dict(stack.versions) or None
    picked: dict[tuple[str, str], Any] = {}
    chosen = [
        item for item in entry["settings"] if _applies(item, run) and _stack_allows(item, versions)
    ]
    # Symbolic values may refer to others (XLA flags to the divisors): resolve in order,
    # literal values first.
    for item in sorted(chosen, key=lambda i: isinstance(i["value"], str)):
        picked[(item["kind"], item["name"])] = _value(item["value"], run, picked)
    settings = tuple(_setting(i, picked[(i["kind"], i["name"])], versions) for i in chosen)
    differences = (
        *({k: v for k, v in d.items() if k != "quote"} for d in entry.get("differences", [])),
        *_added(settings, run),
    )
    return ParitySettings(
        family=workload,
        document=document,
        reference=entry["reference"],
        stack=stack,
        settings=settings,
        unverified=tuple(s.name for s in settings if s.unverified is not None),
        differences=tuple(differences),
    )


_KEPT = ("kind", "name", "source", "unverified", "addition")
"""What a resolved setting keeps of its data (not its conditions, quotes or support)."""


def _setting(item: Mapping[str, Any], value: Any, versions: Any) -> Setting:
    setting = {**{k: item[k] for k in _KEPT if k in item}, "value": value}
    if "requires" in item and versions is None:
        setting["requires"] = item["requires"]  # decided in the container
    return Setting.from_dict(setting)


def _added(settings: tuple[Setting, ...], run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run's declared differences beyond its document's: each setting whose value is
    llmbench's own (``addition``), then llmbench's additions to every launch that apply."""
    out = [
        {
            "name": f"{s.kind} {s.name}",
            "reference": s.addition["reference"],
            "llmbench": str(s.value),
            "reason": s.addition["reason"],
            "source": list(s.source),
        }
        for s in settings
        if s.addition is not None
    ]
    for item in additions():
        when = item.get("when", {})
        if "launcher" in when and run["launcher"] not in when["launcher"]:
            continue
        if "telemetry" in when and run["telemetry"] != when["telemetry"]:
            continue
        out.append({**{k: v for k, v in item.items() if k != "when"}, "source": []})
    return out


def built_vocab(tokenizer: Mapping[str, Any], tp: int) -> int | None:
    """The vocabulary the model is really built with (embedding and output rows): the one
    rule FLOPs and MFU count with (a run's ``model.vocab``, the published rows' checks).

    NeMo 2: a ``NullTokenizer(n)`` reports ``n + 1`` tokens (the end-of-document id), and
    the model pads that to a multiple of ``make_vocab_size_divisible_by x TP``
    (nemo/lightning/base.py ``get_vocab_size``). Megatron-Bridge: the model config's own
    size, padded the same way only where the data says the model pads it (``divisible_by``:
    the dgxc-2025 release, whose model takes its size from the tokenizer); where the recipe
    sets the model's size (v26.08), setup turns padding off and the size is built as is.
    ``tokenizer``: the run's tokenizer settings (``ParitySettings.tokenizer``).
    """
    spec = tokenizer.get("null_tokenizer") or tokenizer.get("model_vocab")
    if spec is None:
        return None
    size = int(spec["vocab_size"]) + (1 if "null_tokenizer" in tokenizer else 0)
    multiple = int(spec.get("divisible_by") or 1) * (tp if spec.get("times_tp") else 1)
    return -(-size // multiple) * multiple


def document_vocab(workload: str, document: str, tp: int) -> int | None:
    """``built_vocab`` of a document's model at ``tp`` (its tokenizer settings hold on
    every run of it): for numbers that are not a run's, such as a published row's."""
    entry = _families().get(workload, {}).get(document, {})
    tokenizer = [s for s in entry.get("settings", []) if s["kind"] == "tokenizer"]
    if any("when" in s or "unless" in s for s in tokenizer):
        raise ConfigError(f"parity.yaml: {workload}/{document}: a conditional tokenizer setting")
    return built_vocab({s["name"]: s["value"] for s in tokenizer}, tp)
