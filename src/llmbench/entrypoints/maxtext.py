"""MaxText entry point: ``MaxText.train`` with key=value overrides, in this process."""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run as a file from a mounted source tree
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from collections.abc import Sequence
from typing import Any

from llmbench.entrypoints.common import EntryOptions, parse_args, pick
from llmbench.errors import LaunchError

MODELS = {("llama2-maxtext", "70b"): "llama2-70b"}
"""MaxText ``model_name`` per workload and size."""

BASE_CONFIG = "MaxText/configs/base.yml"
"""Relative to the MaxText checkout, the image's working directory."""


def config_overrides(options: EntryOptions) -> dict[str, Any]:
    """MaxText config keys for one run.

    FSDP spans the GPUs of a node over ICI (NVLink) and the nodes over DCN; data
    parallelism, where the recipe has any, is across nodes.
    """
    spec = options.spec
    p = spec.parallelism
    per_node = spec.gpus // spec.nodes
    fsdp = int(p.get("fsdp") or 1) if not isinstance(p.get("fsdp"), bool) else spec.gpus
    if fsdp < 1 or fsdp * int(p.get("dp") or 1) != spec.gpus:
        raise LaunchError(
            f"run {spec.run_id}: fsdp={fsdp} x dp={p.get('dp')} must equal gpus={spec.gpus}"
        )
    ici_fsdp = min(fsdp, per_node)
    out: dict[str, Any] = {
        "model_name": MODELS[(spec.workload, spec.size)],
        "run_name": spec.run_id,
        "base_output_directory": options.save_checkpoint or "maxtext-output",
        "hardware": "gpu",
        "steps": options.max_steps,
        "per_device_batch_size": spec.micro_batch_size,
        "max_target_length": spec.seq_len,
        "dataset_type": "synthetic",
        "ici_fsdp_parallelism": ici_fsdp,
        "dcn_fsdp_parallelism": fsdp // ici_fsdp,
        "ici_data_parallelism": per_node // ici_fsdp,
        "dcn_data_parallelism": spec.nodes // (fsdp // ici_fsdp),
        "ici_tensor_parallelism": p.get("tp", 1),
        "enable_checkpointing": bool(options.save_checkpoint or options.load_checkpoint),
    }
    if spec.dtype == "fp8":
        out["quantization"] = "fp8"
    if options.profile_steps:
        start, stop = options.profile_steps
        out.update(profiler="nsys", skip_first_n_steps_for_profiler=start,
                   profiler_steps=stop - start + 1)  # fmt: skip
    if options.save_checkpoint:
        out["checkpoint_period"] = options.max_steps
    if options.load_checkpoint:
        out["load_full_state_path"] = options.load_checkpoint
    return out


def argv_for(options: EntryOptions) -> list[str]:
    """``MaxText.train.main`` argv: program, base config, then ``key=value`` overrides."""
    pick(MODELS, options.spec, "maxtext")
    return ["MaxText.train", BASE_CONFIG] + [
        f"{k}={str(v).lower() if isinstance(v, bool) else v}"
        for k, v in config_overrides(options).items()
    ]


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - needs MaxText
    args = argv_for(parse_args(argv, "llmbench.entrypoints.maxtext"))  # before the heavy import
    # heavy optional dependency (MaxText, in its container): imported only when used
    from MaxText import train

    # JAX finds the other ranks from the SLURM_* variables srun set for this task.
    train.main(args)


if __name__ == "__main__":
    main()
