"""Megatron-Bridge entry point: the library's pretrain config for the spec, trained here.

Two recipe styles, as the reference's releases call the library: the spec's document
(Megatron-Bridge f23d790) calls ``megatron.bridge.recipes.llama.<module>.pretrain_config``
with the precision config; the exemplar releases (v26.08, Megatron-Bridge 0.5 in the image)
call one function per model (``recipe_function``, e.g.
``megatron.bridge.recipes.llama.llama3.llama3_70b_pretrain_config``) and set the precision,
the communication overlap and the perf config's values on the object it returns."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmbench.errors import LaunchError
from llmbench.ranks.entrypoints import common
from llmbench.ranks.entrypoints.common import EntryOptions, apply_overrides, parse_args, pick

RECIPES = {
    ("llama3.1-mbridge", "8b"): "llama3_8b",
    ("llama3.1-mbridge", "70b"): "llama3_70b",
    ("llama3.1-mbridge", "405b"): "llama31_405b",
}
"""Module in ``megatron.bridge.recipes.llama`` (its ``pretrain_config``) per workload and size,
as the reference calls them at Megatron-Bridge f23d790 (catalog/parity.yaml)."""

SPECIAL = {
    "recipe_module", "recipe_function", "mixed_precision", "comm_overlap",
    "comm_overlap.tp_comm_overlap_cfg", "pipeline_layout_function",
}  # fmt: skip
"""Parity recipe settings the entry point builds itself; every other one is a dotted path."""
RECIPES_PACKAGE = "megatron.bridge.recipes.llama"
MODEL_SHAPE = (
    "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups",
    "kv_channels", "num_moe_experts", "moe_router_topk", "moe_ffn_hidden_size",
    "moe_shared_expert_intermediate_size", "moe_layer_freq", "q_lora_rank", "kv_lora_rank",
    "qk_head_dim", "qk_pos_emb_head_dim", "v_head_dim", "mtp_num_layers",
)  # fmt: skip
"""The built model's fields that decide its FLOPs (``--check-only`` reports them)."""


def recipe_call(options: EntryOptions) -> tuple[str, dict[str, Any]]:
    """The recipe and its arguments: the module of ``megatron.bridge.recipes.llama`` whose
    ``pretrain_config(mock=True)`` the spec's document calls, or a release's
    ``recipe_function`` (a dotted name), called without arguments."""
    spec = options.spec
    recipe = spec.parity.recipe
    if "recipe_function" in recipe:
        return str(recipe["recipe_function"]), {}
    module = recipe.get("recipe_module", pick(RECIPES, spec, "megatron-bridge"))
    return module, {"mock": True}


def recipe_function(options: EntryOptions) -> str:
    """The dotted name of the function ``build_config`` calls."""
    name, _ = recipe_call(options)
    return name if release_style(options) else f"{RECIPES_PACKAGE}.{name}.pretrain_config"


def release_style(options: EntryOptions) -> bool:
    """The recipe is a release's function: CUDA graphs come from the settings
    (``model.cuda_graph_impl``), not the row's ``enable_cuda_graph`` switch."""
    return "recipe_function" in options.spec.parity.recipe


FP8_RECIPE = "bf16_with_fp8_current_scaling_mixed"
"""The reference's FP8 recipe (current scaling) when the parity data names none."""


def precision(options: EntryOptions) -> tuple[str, dict[str, Any]]:
    """The mixed-precision config function and the fields set on the object it returns.

    An object, not the recipe name as a string: with a string, Megatron-Bridge applies the
    recipe's defaults (first/last layers in BF16, gradient reduction in FP32) over ours.
    """
    spec = options.spec
    recipe = spec.parity.recipe
    default = FP8_RECIPE if spec.dtype == "fp8" else "bf16_mixed"
    name = recipe.get("mixed_precision") or default
    prefix = "mixed_precision."
    return name, {k[len(prefix) :]: v for k, v in recipe.items() if k.startswith(prefix)}


def overrides(options: EntryOptions) -> dict[str, Any]:
    """Dotted paths of the ConfigContainer -> values for one run."""
    spec = options.spec
    p = spec.parallelism
    out: dict[str, Any] = {
        "train.train_iters": options.max_steps,
        "train.micro_batch_size": spec.micro_batch_size,
        "train.global_batch_size": spec.global_batch_size,
        "train.eval_iters": 0,
        "model.seq_length": spec.seq_len,
        "dataset.sequence_length": spec.seq_len,
        "model.tensor_model_parallel_size": p.get("tp", 1),
        "model.pipeline_model_parallel_size": p.get("pp", 1),
        "model.context_parallel_size": p.get("cp", 1),
        "model.virtual_pipeline_model_parallel_size": p.get("vp"),
    }
    if p.get("ep"):
        out["model.expert_model_parallel_size"] = p["ep"]
    if p.get("etp"):
        out["model.expert_tensor_parallel_size"] = p["etp"]
    if p.get("fsdp"):
        out["ddp.use_megatron_fsdp"] = True
    if p.get("cuda_graphs") and not release_style(options):
        out["model.enable_cuda_graph"] = True
    if p.get("recompute_layers"):
        out["model.recompute_granularity"] = "full"
        out["model.recompute_method"] = "block"
        out["model.recompute_num_layers"] = p["recompute_layers"]
    if p.get("offload_layers"):
        out["model.cpu_offloading"] = True
        out["model.cpu_offloading_num_layers"] = p["offload_layers"]
    # The reference's settings for the document (they win over the row's columns).
    recipe = spec.parity.recipe
    out.update({k: v for k, v in recipe.items() if k not in SPECIAL and not k.startswith("mixed_")})
    out.update(spec.parity.logging)
    if options.profile_steps:
        out["profiling.use_nsys_profiler"] = True
        out["profiling.profile_step_start"], out["profiling.profile_step_end"] = (
            options.profile_steps
        )
    if options.save_checkpoint:
        out["checkpoint.save"] = options.save_checkpoint
        out["checkpoint.save_interval"] = options.max_steps
    if options.load_checkpoint:
        out["checkpoint.load"] = options.load_checkpoint
    if p.get("fsdp") and (options.save_checkpoint or options.load_checkpoint):
        # Megatron-FSDP saves and loads only its own format; validate() refuses the
        # recipe's torch_dist (the reference's runs never checkpoint)
        out["checkpoint.ckpt_format"] = "fsdp_dtensor"
    return out


def resolved(options: EntryOptions) -> dict[str, Any]:
    """What this entry point builds for the run, as data (``llmbench render``)."""
    _, kwargs = recipe_call(options)
    name, fields = precision(options)
    recipe = options.spec.parity.recipe
    return {
        "recipe": recipe_function(options),
        "recipe_kwargs": kwargs,
        "mixed_precision": {"function": name, "fields": fields},
        "comm_overlap": recipe.get("comm_overlap"),
        "tp_comm_overlap_cfg": recipe.get("comm_overlap.tp_comm_overlap_cfg"),
        "pipeline_layout_function": recipe.get("pipeline_layout_function"),
        "overrides": overrides(options),
        "decided_in_container": common.pending_settings(options.spec),
    }


def build_config(options: EntryOptions) -> Any:  # pragma: no cover - needs the library
    """The reference's recipe with the run's precision, userbuffers config and overrides.

    Every override must name a field of the library's config (``set_path``): an override
    the installed Megatron-Bridge does not know fails here, before any training.
    """
    _, kwargs = recipe_call(options)
    precision_name, precision_fields = precision(options)
    recipe = options.spec.parity.recipe
    # heavy optional dependency (in the training image or venv): imported only here
    from megatron.bridge.training import comm_overlap, mixed_precision

    mixed = getattr(mixed_precision, precision_name)()
    for name, value in precision_fields.items():
        common.set_path(mixed, name, value)
    function = _function(recipe_function(options))
    if release_style(options):  # the release's builders set the precision on the object
        config = function(**kwargs)
        config.mixed_precision = mixed
    else:
        config = function(precision_config=mixed, **kwargs)
    if isinstance(recipe.get("comm_overlap"), dict):
        config.comm_overlap = comm_overlap.CommOverlapConfig(**recipe["comm_overlap"])
    cfg_name = recipe.get("comm_overlap.tp_comm_overlap_cfg")
    if cfg_name:
        config.comm_overlap.tp_comm_overlap_cfg = getattr(comm_overlap, cfg_name)
    apply_overrides(config, overrides(options))
    layout = recipe.get("pipeline_layout_function")
    if layout and "model.pipeline_model_parallel_layout" not in recipe:
        _function(layout)(config.model)  # for the run's PP and VP sizes
    return config


def _function(dotted: str) -> Any:  # pragma: no cover - needs the library
    """The library function a dotted name names; one line when the image lacks it."""
    module_name, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as exc:
        raise LaunchError(f"{dotted}: not in this image's Megatron-Bridge: {exc}") from None


def _plain(value: Any) -> Any:
    """A config value as JSON: numbers, strings, booleans and None as they are; anything
    else (a dtype, an enum, a config object) by its class name and text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value):
        return type(value).__name__
    return str(value)


def _get_path(root: Any, dotted: str) -> Any:
    node = root
    for name in dotted.split("."):
        node = getattr(node, name)
    return node


def check_config(config: Any, options: EntryOptions) -> dict[str, Any]:  # pragma: no cover
    """What ``build_config`` built, read back from the library's objects: every override's
    final value, the precision and userbuffers objects, the vocabulary the model is padded
    to; then the library's own checks with the run's world size, as far as a CPU allows
    (its error, if any, is returned): ``runtime_config_update``, what ``pretrain`` runs
    first (the precision and communication-overlap configs applied to the model, then
    ``validate()``: parallel sizes, FSDP, checkpoint and precision rules)."""
    # heavy optional dependency (in the training image or venv): imported only here
    from megatron.bridge.training import comm_overlap
    from megatron.bridge.training.config import runtime_config_update
    from megatron.bridge.utils.vocab_utils import calculate_padded_vocab_size

    spec = options.spec
    values = {path: _plain(_get_path(config, path)) for path in overrides(options)}
    _, precision_fields = precision(options)
    for name in precision_fields:
        values[f"mixed_precision.{name}"] = _plain(getattr(config.mixed_precision, name))
    ub = config.comm_overlap.tp_comm_overlap_cfg if config.comm_overlap is not None else None
    model = config.model
    # setup's rule (training/setup.py _validate_and_set_vocab_size): the tokenizer's size,
    # padded, where the model sets none; else the model's own, unpadded
    vocab = config.tokenizer.vocab_size if model.vocab_size is None else model.vocab_size
    padded = model.vocab_size is None
    out: dict[str, Any] = {
        "run_id": spec.run_id,
        "model_class": type(model).__name__,
        "values": values,
        "mixed_precision_class": type(config.mixed_precision).__name__,
        # the userbuffers config by its name in the library (None: the recipe's default)
        "tp_comm_overlap_cfg": next(
            (name for name, value in vars(comm_overlap).items() if ub is not None and value is ub),
            _plain(ub),
        ),
        "built_vocab": calculate_padded_vocab_size(
            vocab, model.make_vocab_size_divisible_by, spec.parallelism.get("tp") or 1
        )
        if padded
        else vocab,
        "model_shape": {name: _plain(getattr(model, name, None)) for name in MODEL_SHAPE},
        "validate_error": None,
    }
    os.environ["WORLD_SIZE"] = str(spec.gpus)  # the data-parallel size validate() derives
    if importlib.util.find_spec("transformer_engine") is None:
        for name in common.CPU_ONLY_FUSIONS_OFF:
            setattr(config.model, name, False)
    try:
        runtime_config_update(config)
    except Exception as exc:  # the verdict is the result: reported, not raised
        out["validate_error"] = f"{type(exc).__name__}: {exc}"[:500]
    return out


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - needs the library
    options = parse_args(argv, "llmbench.ranks.entrypoints.megatron_bridge", can_check=True)
    config = build_config(options)
    if options.check_only:
        result = check_config(config, options)
        Path(options.check_only).write_text(json.dumps(result, indent=2, sort_keys=True))
        return
    # heavy optional dependency (in the training image or venv): imported only here
    from megatron.bridge.training.gpt_step import forward_step
    from megatron.bridge.training.pretrain import pretrain

    pretrain(config, forward_step)


if __name__ == "__main__":
    main()
