"""Megatron-Bridge entry point: the library's pretrain config for the spec, trained here."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from llmbench.errors import LaunchError
from llmbench.ranks.entrypoints.common import EntryOptions, apply_overrides, parse_args, pick
from llmbench.spec.runspec import parity_settings

RECIPES = {
    ("llama3.1-mbridge", "8b"): "llama3_8b",
    ("llama3.1-mbridge", "70b"): "llama3_70b",
    ("llama3.1-mbridge", "405b"): "llama31_405b",
}
"""Module in ``megatron.bridge.recipes.llama`` (its ``pretrain_config``) per workload and size,
as the reference calls them at Megatron-Bridge f23d790 (catalog/parity.yaml)."""

SPECIAL = {"recipe_module", "mixed_precision", "comm_overlap.tp_comm_overlap_cfg"}
"""Parity recipe settings the entry point builds itself; every other one is a dotted path."""


def recipe_call(options: EntryOptions) -> tuple[str, dict[str, Any]]:
    """``megatron.bridge.recipes.llama.<module>.pretrain_config`` and its arguments."""
    spec = options.spec
    recipe = parity_settings(spec.parity, "recipe")
    module = recipe.get("recipe_module", pick(RECIPES, spec, "megatron-bridge"))
    return module, {"mock": True}


FP8_RECIPE = "bf16_with_fp8_current_scaling_mixed"
"""The reference's FP8 recipe (current scaling) when the parity data names none."""


def precision(options: EntryOptions) -> tuple[str, dict[str, Any]]:
    """The mixed-precision config function and the fields set on the object it returns.

    An object, not the recipe name as a string: with a string, Megatron-Bridge applies the
    recipe's defaults (first/last layers in BF16, gradient reduction in FP32) over ours.
    """
    spec = options.spec
    recipe = parity_settings(spec.parity, "recipe")
    name = recipe.get("mixed_precision", FP8_RECIPE) if spec.dtype == "fp8" else "bf16_mixed"
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
    if p.get("cuda_graphs"):
        out["model.enable_cuda_graph"] = True
    if p.get("recompute_layers"):
        out["model.recompute_granularity"] = "full"
        out["model.recompute_method"] = "block"
        out["model.recompute_num_layers"] = p["recompute_layers"]
    if p.get("offload_layers"):
        out["model.cpu_offloading"] = True
        out["model.cpu_offloading_num_layers"] = p["offload_layers"]
    # The reference's settings for the document (they win over the row's columns).
    recipe = parity_settings(spec.parity, "recipe")
    out.update({k: v for k, v in recipe.items() if k not in SPECIAL and not k.startswith("mixed_")})
    out.update(parity_settings(spec.parity, "logging"))
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
    return out


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - needs the library

    options = parse_args(argv, "llmbench.ranks.entrypoints.megatron_bridge")
    module_name, kwargs = recipe_call(options)
    precision_name, precision_fields = precision(options)
    # heavy optional dependency (in the training image or venv): imported only here
    from megatron.bridge.training import mixed_precision
    from megatron.bridge.training.gpt_step import forward_step
    from megatron.bridge.training.pretrain import pretrain

    try:
        module = importlib.import_module(f"megatron.bridge.recipes.llama.{module_name}")
    except ImportError as exc:
        raise LaunchError(f"megatron.bridge.recipes.llama.{module_name}: {exc}") from None
    mixed = getattr(mixed_precision, precision_name)()
    for name, value in precision_fields.items():
        setattr(mixed, name, value)
    config = module.pretrain_config(precision_config=mixed, **kwargs)
    cfg_name = parity_settings(options.spec.parity, "recipe").get(
        "comm_overlap.tp_comm_overlap_cfg"
    )
    if cfg_name:
        from megatron.bridge.training import comm_overlap  # the userbuffers configs live here

        config.comm_overlap.tp_comm_overlap_cfg = getattr(comm_overlap, cfg_name)
    apply_overrides(config, overrides(options))
    pretrain(config, forward_step)


if __name__ == "__main__":
    main()
