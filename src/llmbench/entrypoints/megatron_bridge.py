"""Megatron-Bridge entry point: the library's pretrain config for the spec, trained here."""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run as a file from a mounted source tree
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from collections.abc import Sequence
from typing import Any

from llmbench.entrypoints.common import EntryOptions, apply_overrides, parse_args, pick
from llmbench.errors import LaunchError

RECIPES = {
    ("llama3.1-mbridge", "8b"): "llama31_8b_pretrain_config",
    ("llama3.1-mbridge", "70b"): "llama31_70b_pretrain_config",
    ("llama3.1-mbridge", "405b"): "llama31_405b_pretrain_config",
}
"""Function in ``megatron.bridge.recipes.llama`` per workload and size."""

FP8_RECIPE = "bf16_with_fp8_current_scaling_mixed"


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
        "mixed_precision": FP8_RECIPE if spec.dtype == "fp8" else "bf16_mixed",
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
    options = parse_args(argv, "llmbench.entrypoints.megatron_bridge")
    name = pick(RECIPES, options.spec, "megatron-bridge")
    # heavy optional dependency (Megatron-Bridge, in its container): imported only when used
    from megatron.bridge.recipes import llama
    from megatron.bridge.training.gpt_step import forward_step
    from megatron.bridge.training.pretrain import pretrain

    if not hasattr(llama, name):
        found = ", ".join(n for n in dir(llama) if n.endswith("pretrain_config"))
        raise LaunchError(f"megatron.bridge.recipes.llama has no {name}; found: {found}")
    config = getattr(llama, name)()
    apply_overrides(config, overrides(options))
    pretrain(config, forward_step)  # mock data is the recipes' default


if __name__ == "__main__":
    main()
