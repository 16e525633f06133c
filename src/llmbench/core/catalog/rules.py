"""Parallelism rules every catalog row and every override must satisfy.

Each rule is a small function returning ``None`` or one message of the form
``<field>=<value>: <rule>``; ``validate_row`` raises the first as a ConfigError.
World size (llama31-nemo2-h100.txt and siblings): GPUs = TP x PP x CP x DP. On
Megatron-Bridge DP includes FSDP sharding (llama31-megatron-bridge-gb300-gb200-b200-h100.md);
on MaxText GPUs = FSDP x DP (maxtext-llama2-70b-h100.txt). GA = GBS / (MBS x DP).

Uneven layer splits: the published Llama 3.1 405B rows use 126 layers with PP 8 x VP 8 (64
virtual stages) and the 405B proxies 30 or 62 layers with PP 4 x VP 8 (32 stages); none
divides. Megatron can count the input embedding and the loss each as one layer of the
first and last pipeline stage, so the rule is: with PP > 1, ``layers`` or ``layers + 2``
must be divisible by PP x VP (VP = 1 when NA). 126 + 2 = 128 = 2 x 64, 30 + 2 = 32,
62 + 2 = 64; e.g. 80 layers with PP 3 still fails. See docs/catalog.md.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from llmbench.core.catalog.formulas import evaluate
from llmbench.core.catalog.records import DTYPES, OVERRIDABLE, SCALINGS, RecipeRow
from llmbench.errors import ConfigError

PIPELINE_EXTRA_LAYERS = 2
"""Embedding + loss, counted as layers of the first and last pipeline stage."""

Rule = Callable[[RecipeRow], "str | None"]


def nodes_for(gpus: int, gpus_per_node: int) -> int:
    """Nodes needed: GPUs / GPUs per node, or 1 for less than a node."""
    return max(1, math.ceil(gpus / gpus_per_node))


def _positive(row: RecipeRow) -> str | None:
    for name in ("gpus", "seq_len", "layers", "tp", "pp", "cp", "dp", "mbs", "gbs", "ga"):
        value = getattr(row, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"{name}={value}: must be a positive integer"
    for name in ("vp", "ep", "etp"):
        value = getattr(row, name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            return f"{name}={value}: must be a positive integer or NA"
    for name in ("recompute_layers", "offload_layers"):
        value = getattr(row, name)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= row.layers:
            return f"{name}={value}: must be between 0 and layers ({row.layers})"
    return None


def _names(row: RecipeRow) -> str | None:
    if row.dtype not in DTYPES:
        return f"dtype={row.dtype}: allowed: {', '.join(DTYPES)}"
    if row.scaling not in SCALINGS:
        return f"scaling={row.scaling}: allowed: {', '.join(SCALINGS)}"
    if not isinstance(row.cuda_graphs, bool):
        return f"cuda_graphs={row.cuda_graphs}: must be true or false"
    return None


def _fsdp(row: RecipeRow) -> str | None:
    if row.framework == "maxtext":
        if isinstance(row.fsdp, bool) or not isinstance(row.fsdp, int) or row.fsdp < 1:
            return f"fsdp={row.fsdp}: MaxText needs the FSDP degree, a positive integer"
    elif not isinstance(row.fsdp, bool):
        return f"fsdp={row.fsdp}: {row.framework} takes true or false (DP includes FSDP)"
    return None


def _fp8_support(row: RecipeRow) -> str | None:
    if row.gpu is not None and not row.gpu.supports(row.dtype):
        allowed = ", ".join(sorted(row.gpu.peak_tflops))
        return f"dtype={row.dtype}: not supported on {row.gpu_type}; allowed: {allowed}"
    return None


def _heads_divisible(row: RecipeRow) -> str | None:
    if row.model is None:
        return None
    shape = row.model.shape
    if shape.heads % row.tp:
        return f"tp={row.tp}: attention heads ({shape.heads}) must be divisible by tp"
    if shape.query_groups % row.tp:
        return f"tp={row.tp}: query groups ({shape.query_groups}) must be divisible by tp"
    return None


def _experts(row: RecipeRow) -> str | None:
    """Dense models take no EP/ETP; expert models need TP x CP x DP = ETP x EP x expert-DP."""
    experts = row.model.experts if row.model is not None else 0
    ep, etp = row.ep or 1, row.etp or 1
    if experts == 0:
        if ep != 1:
            return f"ep={row.ep}: {row.size} has no experts; ep must be NA or 1"
        if etp != 1:
            return f"etp={row.etp}: {row.size} has no experts; etp must be NA or 1"
        return None
    if experts % ep:
        return f"ep={ep}: experts ({experts}) must be divisible by ep"
    if (row.tp * row.cp * row.dp) % (etp * ep):
        return (
            f"ep={ep}: etp x ep ({etp * ep}) must divide tp x cp x dp ({row.tp * row.cp * row.dp})"
        )
    return None


def _world_size(row: RecipeRow) -> str | None:
    model_parallel = row.tp * row.pp * row.cp
    if row.framework == "maxtext":
        product = model_parallel * row.fsdp_size * row.dp
        if product != row.gpus:
            return f"dp={row.dp}: tp x pp x cp x fsdp x dp ({product}) must equal gpus ({row.gpus})"
        return None
    if model_parallel * row.dp != row.gpus:
        product = model_parallel * row.dp
        return f"dp={row.dp}: tp x pp x cp x dp ({product}) must equal gpus ({row.gpus})"
    return None


def _batch(row: RecipeRow) -> str | None:
    per_step = row.mbs * row.data_parallel_total
    if row.gbs % per_step:
        return f"gbs={row.gbs}: must be divisible by mbs x dp ({per_step})"
    if row.ga != row.gbs // per_step:
        return f"ga={row.ga}: must equal gbs / (mbs x dp) = {row.gbs // per_step}"
    return None


def _virtual_pipeline(row: RecipeRow) -> str | None:
    if row.vp is not None and row.pp == 1:
        return f"vp={row.vp}: virtual pipeline needs pp > 1 (pp=1)"
    return None


def _layers_split(row: RecipeRow) -> str | None:
    if row.pp == 1:
        return None
    stages = row.pp * (row.vp or 1)
    # MTP layers sit on the last stage too (DeepSeek V3's layouts: 61 + 1 + 2 = 64 units)
    mtp = row.model.extras.mtp_layers if row.model is not None else 0
    units = row.layers + mtp
    if units % stages and (units + PIPELINE_EXTRA_LAYERS) % stages:
        what = "pp x vp" if row.vp else "pp"
        counted = f"layers ({row.layers})" + (f" + MTP layers ({mtp})" if mtp else "")
        plus = "that" if mtp else "layers"
        return (
            f"pp={row.pp}: {counted} or {plus} + 2 (embedding and loss stages) "
            f"must be divisible by {what} ({stages})"
        )
    return None


def _context_parallel(row: RecipeRow) -> str | None:
    if row.cp > 1 and row.seq_len % (2 * row.cp):
        return f"cp={row.cp}: sequence length ({row.seq_len}) must be divisible by 2 x cp"
    return None


def _nodes(row: RecipeRow) -> str | None:
    if row.gpu is None:
        return None
    per_node = row.gpu.gpus_per_node
    if row.gpus > per_node and row.gpus % per_node:
        return (
            f"gpus={row.gpus}: must be a multiple of {per_node} GPUs per {row.gpu_type} node "
            "(or less than one node)"
        )
    if row.nodes != nodes_for(row.gpus, per_node):
        return f"nodes={row.nodes}: must be {nodes_for(row.gpus, per_node)} for {row.gpus} GPUs"
    return None


def _scale_exists(row: RecipeRow) -> str | None:
    if not row.listed_scales or row.gpus in row.listed_scales:
        return None
    if row.scale_range is not None and row.scale_range[0] <= row.gpus <= row.scale_range[1]:
        return None
    return f"gpus={row.gpus}: {scale_message(row)}"


def scale_message(row: RecipeRow) -> str:
    """``is not a scale of W S D on G; allowed: ...`` for the row's listed scales."""
    listed = ", ".join(str(g) for g in row.listed_scales)
    if row.scale_range is not None:
        lo, hi = row.scale_range
        listed = f"{lo}-{hi} (listed: {listed})"
    scaling = " (strong scaling)" if row.scaling == "strong" else ""
    return (
        f"is not a scale of {row.workload} {row.size} {row.dtype} on {row.gpu_type}{scaling}; "
        f"allowed: {listed}"
    )


RULES: tuple[Rule, ...] = (
    _positive,
    _names,
    _fsdp,
    _fp8_support,
    _scale_exists,
    _nodes,
    _heads_divisible,
    _experts,
    _context_parallel,
    _virtual_pipeline,
    _layers_split,
    _world_size,
    _batch,
)
"""Checked in this order; the first failure is the one reported."""


def validate_row(row: RecipeRow) -> RecipeRow:
    """Return ``row`` if it satisfies every rule; else raise ConfigError with the first."""
    for rule in RULES:
        message = rule(row)
        if message is not None:
            raise ConfigError(message)
    return row


def _derived_dp(row: RecipeRow) -> int | None:
    divisor = row.tp * row.pp * row.cp * row.fsdp_size
    if divisor <= 0 or row.gpus % divisor:
        return None
    return row.gpus // divisor


def with_overrides(row: RecipeRow, **fields: Any) -> RecipeRow:
    """A copy of ``row`` with ``fields`` replaced, dependent values re-derived, validated.

    Re-derived unless given: ``nodes`` (always) from gpus and GPUs per node; ``gbs`` when
    the document writes it as a ``GPUs`` formula (Megatron-Bridge) and gpus changes;
    ``dp`` = gpus / (tp x pp x cp [x fsdp on MaxText]); ``ga`` = gbs / (mbs x dp).
    ``gbs`` otherwise stays as given (changing gpus alone keeps the batch, so GA moves).
    Raises ConfigError naming the field, the value and the rule that fails.
    """
    unknown = sorted(set(fields) - set(OVERRIDABLE))
    if unknown:
        raise ConfigError(
            f"{unknown[0]}={fields[unknown[0]]!r}: cannot be overridden; allowed: "
            + ", ".join(OVERRIDABLE)
        )
    new = dataclasses.replace(row, **fields)
    if _positive(new) is not None:
        raise ConfigError(str(_positive(new)))
    if "gpus" in fields:
        formulas = {name: f for name, f in row.formulas if name not in fields and name != "dp"}
        new = dataclasses.replace(
            new, **{name: evaluate(f, new.gpus, name) for name, f in formulas.items()}
        )
    if new.gpu is not None:
        new = dataclasses.replace(new, nodes=nodes_for(new.gpus, new.gpu.gpus_per_node))
    if "dp" not in fields:
        dp = _derived_dp(new)
        if dp is not None:
            new = dataclasses.replace(new, dp=dp)
    if "ga" not in fields:
        per_step = new.mbs * new.data_parallel_total
        if per_step > 0 and new.gbs % per_step == 0:
            new = dataclasses.replace(new, ga=new.gbs // per_step)
    return validate_row(new)
