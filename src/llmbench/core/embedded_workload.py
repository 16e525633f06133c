"""Shapes and batch settings of the embedded ``tiny-llama`` workload.

Sized so that one 50-step run takes seconds on one CPU core per rank, while keeping the
Llama architecture (GQA, SwiGLU MLP, RMSNorm, RoPE) that the FLOPs formula describes.
"""

from __future__ import annotations

from llmbench.core.flops import ModelShape

WORKLOAD = "tiny-llama"
FRAMEWORK = "torch"
DTYPES = ("fp32", "bf16")
MICRO_BATCH_SIZE = 4
GRAD_ACCUMULATION = 1
SIZES: dict[str, ModelShape] = {
    "tiny": ModelShape(
        layers=2, hidden=128, ffn_hidden=352, heads=4, query_groups=2, vocab=2048, seq_len=128
    ),
}


def global_batch_size(ranks: int) -> int:
    """Weak scaling as in the recipes: GBS = MBS x DP x GA, GA fixed."""
    return MICRO_BATCH_SIZE * ranks * GRAD_ACCUMULATION
