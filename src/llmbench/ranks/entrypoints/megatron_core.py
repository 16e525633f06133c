"""Megatron-Core entry point: its ``GPTModel`` with the local layer spec (plain PyTorch
layers, no Transformer Engine) in the run spec's Llama shape, trained on one GPU.

Trained as the embedded workload is: synthetic tokens from a fixed pool, AdamW with the
same learning-rate schedule, fp32 or bf16 autocast, one NeMo 2 step line per iteration
(so the same parser reads it) and the step clock (``llmbench.ranks.step_clock``) for the
window's energy. Run as ``python -m llmbench.ranks.entrypoints.megatron_core --spec
run_spec.json`` (``launcher: local`` starts it through torchrun).

``--check-only OUT`` builds the model on the CPU and writes what it found to OUT (JSON):
the parameter count, and whether one training step runs on the CPU. Megatron-Core 0.16
does not: its rotary embedding and attention buffers are placed with
``torch.cuda.current_device()``, so the step fails there with the error it raises.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmbench.core.runspec import RunSpec
from llmbench.errors import LaunchError
from llmbench.ranks.embedded.train import (
    DATA_POOL_SEQUENCES,
    PEAK_LR,
    learning_rate,
    nemo_step_line,
    run_rank,
)
from llmbench.ranks.entrypoints.common import parse_args
from llmbench.ranks.step_clock import open_step_clock, record_step

SEED = 1234


def transformer_config(spec: RunSpec) -> dict[str, Any]:
    """``TransformerConfig`` arguments for the spec's model: the Llama architecture the
    FLOPs formula counts (grouped-query attention, SwiGLU MLP, RMSNorm, no biases, RoPE
    set on the model), without dropout and without fusions that need extra kernels."""
    m = spec.model
    return {
        "num_layers": m["layers"],
        "hidden_size": m["hidden"],
        "ffn_hidden_size": m["ffn_hidden"],
        "num_attention_heads": m["heads"],
        "num_query_groups": m["query_groups"],
        "gated_linear_unit": True,
        "normalization": "RMSNorm",
        "add_bias_linear": False,
        "hidden_dropout": 0.0,
        "attention_dropout": 0.0,
        "masked_softmax_fusion": False,
        "bias_activation_fusion": False,
        "bias_dropout_fusion": False,
        "apply_rope_fusion": False,
        "gradient_accumulation_fusion": False,
    }


def expected_parameters(model: dict[str, Any]) -> int:
    """Parameters of that shape: untied input and output embeddings (2 V h); per layer the
    fused QKV projection h (h + 2 h g / a), the output projection h^2, the SwiGLU MLP
    3 h f and two RMSNorm weights; the final RMSNorm."""
    h, f, layers, vocab = model["hidden"], model["ffn_hidden"], model["layers"], model["vocab"]
    kv = 2 * h * model["query_groups"] // model["heads"]
    per_layer = h * (h + kv) + h * h + 3 * h * f + 2 * h
    return 2 * vocab * h + layers * per_layer + h


def _build(spec: RunSpec, on_cpu: bool) -> Any:
    """The GPTModel, with Megatron's parallel state initialised for one rank; on a GPU the
    weights are created there."""
    # heavy optional dependency (the megatron-core wheel): imported only here
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from megatron.core import parallel_state, tensor_parallel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.models.gpt.gpt_model import GPTModel
    from megatron.core.transformer.transformer_config import TransformerConfig

    # A group of one: Megatron's parallel state is built on torch.distributed.
    dist.init_process_group(
        "gloo" if on_cpu else "nccl", rank=0, world_size=1, store=dist.HashStore()
    )
    parallel_state.initialize_model_parallel(1, 1)
    torch.manual_seed(SEED)
    if not on_cpu:
        tensor_parallel.model_parallel_cuda_manual_seed(SEED)
    config = TransformerConfig(
        **transformer_config(spec), activation_func=F.silu, use_cpu_initialization=on_cpu
    )
    model = GPTModel(
        config=config,
        transformer_layer_spec=get_gpt_layer_local_spec(normalization="RMSNorm"),
        vocab_size=spec.model["vocab"],
        max_sequence_length=spec.seq_len,
        position_embedding_type="rope",
        share_embeddings_and_output_weights=False,
    )
    return model


def _teardown() -> None:
    # heavy optional dependency (the megatron-core wheel): imported only here
    import torch.distributed as dist
    from megatron.core import parallel_state

    parallel_state.destroy_model_parallel()
    dist.destroy_process_group()


def _batch(torch: Any, spec: RunSpec, device: Any) -> tuple[Any, Any, Any]:
    """The token pool (one token longer than a sequence, for the shifted labels), the
    positions and the causal mask (True: masked out)."""
    pool = torch.randint(
        0,
        spec.model["vocab"],
        (DATA_POOL_SEQUENCES, spec.seq_len + 1),
        generator=torch.Generator().manual_seed(0),
    ).to(device)
    positions = torch.arange(spec.seq_len, device=device).unsqueeze(0)
    mask = torch.ones(1, 1, spec.seq_len, spec.seq_len, device=device).tril() < 0.5
    return pool, positions, mask


def _loss(model: Any, tokens: Any, positions: Any, mask: Any) -> Any:
    inputs, labels = tokens[:, :-1], tokens[:, 1:]
    per_token = model(inputs, positions.expand_as(inputs), mask, labels=labels)
    return per_token.float().mean()


def check(spec: RunSpec) -> dict[str, Any]:
    """Build the model on the CPU and try one training step there (see the docstring)."""
    # heavy optional dependencies (the megatron-core wheel, torch): imported only here
    import megatron.core
    import torch

    model = _build(spec, on_cpu=True)
    result: dict[str, Any] = {
        "framework": "megatron-core",
        "version": megatron.core.__version__,
        "model": "GPTModel",
        "layer_spec": "local (get_gpt_layer_local_spec: no Transformer Engine)",
        "parameters": sum(p.numel() for p in model.parameters()),
        "expected_parameters": expected_parameters(dict(spec.model)),
        "built": True,
    }
    pool, positions, mask = _batch(torch, spec, torch.device("cpu"))
    try:
        _loss(model, pool[: spec.micro_batch_size], positions, mask).backward()
        result["cpu_step"] = "ok"
    except Exception as exc:  # Megatron's own error, whatever its type: recorded as found
        result["cpu_step"] = f"{type(exc).__name__}: {exc}{_where(exc)}"
    del model
    _teardown()
    return result


def _where(exc: BaseException) -> str:
    """`` (at megatron/...py:<line>)``: the innermost frame of Megatron's code."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/megatron/" in f.filename]
    if not frames:
        return ""
    path = frames[-1].filename
    return f" (at {path[path.rindex('/megatron/') + 1 :]}:{frames[-1].lineno})"


def train(spec: RunSpec) -> None:
    """``spec.steps`` iterations on GPU 0 of this process (or the CPU, for a framework
    release whose step runs there)."""
    import torch  # heavy optional dependency (the embedded extra)

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(0)
    torch.set_num_threads(spec.threads_per_rank)
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    model = _build(spec, on_cpu=not cuda)
    model.to(device)
    _steps(spec, model, device)
    del model
    _teardown()


def _steps(spec: RunSpec, model: Any, device: Any) -> None:
    import torch  # heavy optional dependency (the embedded extra)

    optimizer = torch.optim.AdamW(model.parameters(), lr=PEAK_LR, weight_decay=0.01)
    pool, positions, mask = _batch(torch, spec, device)
    autocast = (
        torch.autocast(device.type, dtype=torch.bfloat16)
        if spec.dtype == "bf16"
        else contextlib.nullcontext()
    )
    mbs = spec.micro_batch_size
    clock = open_step_clock(0)
    with clock if clock is not None else contextlib.nullcontext():
        for step in range(spec.steps):
            wall_start = time.time()
            start = time.perf_counter()
            lr = learning_rate(step, spec.steps)
            for group in optimizer.param_groups:
                group["lr"] = lr
            optimizer.zero_grad(set_to_none=True)
            rows = torch.arange(step * mbs, (step + 1) * mbs, device=device) % DATA_POOL_SEQUENCES
            with autocast:
                loss = _loss(model, pool[rows], positions, mask)
            loss.backward()
            optimizer.step()
            if device.type == "cuda":  # the step ends when the GPU is done with it
                torch.cuda.synchronize(device)
            step_time_s = time.perf_counter() - start
            if clock is not None:
                record_step(clock, step, wall_start, wall_start + step_time_s)
            peak_mem = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
            line = nemo_step_line(
                step, spec.steps, lr, spec.global_batch_size, float(loss), step_time_s, peak_mem
            )
            print(line, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv, "llmbench.ranks.entrypoints.megatron_core", can_check=True)
    spec = options.spec
    if spec.gpus != 1:
        raise LaunchError(
            f"run {spec.run_id}: gpus={spec.gpus}: the Megatron-Core entry point trains on "
            "one GPU; allowed: 1"
        )
    if options.check_only:
        Path(options.check_only).write_text(json.dumps(check(spec), indent=2) + "\n")
        return 0
    print(
        f"llmbench megatron-core entry point: run {spec.run_id} pid {os.getpid()} "
        f"dtype={spec.dtype} gbs={spec.global_batch_size} steps={spec.steps}",
        flush=True,
    )
    return run_rank(0, lambda: train(spec))


if __name__ == "__main__":
    sys.exit(main())
