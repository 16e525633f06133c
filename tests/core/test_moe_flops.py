"""Megatron-Bridge's FLOPs count (``llmbench.core.flops``, family ``megatron-bridge``) against
an independent computation from the model cards' shapes: six FLOPs per token for every
weight a token multiplies by (the active experts only), plus the causal attention core,
counted weight by weight instead of by the framework's grouping of terms."""

from __future__ import annotations

import dataclasses

import pytest

from llmbench.core.catalog import load_catalog
from llmbench.core.flops import ModelExtras, ModelShape, flops_breakdown

CATALOG = load_catalog()


def card(workload: str, size: str) -> tuple[ModelShape, ModelExtras]:
    model = CATALOG.model(workload, size, source="exemplar-v26.08")
    assert model.flops_family == "megatron-bridge"
    return model.shape, model.extras


def active_weights(shape: ModelShape, x: ModelExtras) -> int:
    """Weights one token multiplies by in the decoder, the MTP layers and the output layer
    (the input embedding is a lookup; norms and routers are not counted)."""
    h = shape.hidden
    if x.kv_lora_rank:  # latent attention: compress, expand, and the decoupled RoPE key
        heads = shape.heads
        q = (h * x.q_lora_rank + x.q_lora_rank * heads * (x.qk_head_dim + x.qk_rope_dim)
             if x.q_lora_rank else h * heads * (x.qk_head_dim + x.qk_rope_dim))  # fmt: skip
        kv = h * (x.kv_lora_rank + x.qk_rope_dim) + x.kv_lora_rank * heads * (
            x.qk_head_dim + x.v_head_dim
        )
        attention = q + kv + heads * x.v_head_dim * h
    else:
        d = x.head_dim or h // shape.heads
        attention = 2 * h * shape.heads * d + 2 * h * shape.query_groups * d
    layers = shape.layers + x.mtp_layers
    dense = x.dense_layers if x.experts else layers
    moe = layers - dense
    mlp = dense * 3 * h * shape.ffn_hidden + moe * (
        x.topk * 3 * h * x.moe_ffn_hidden + 3 * h * x.shared_ffn_hidden
    )
    mtp_projection = x.mtp_layers * 2 * h * h
    output = (1 + x.mtp_layers) * h * shape.vocab
    return layers * attention + mlp + mtp_projection + output


def causal_core(shape: ModelShape, x: ModelExtras) -> float:
    """QK^T and AV over the s / 2 positions a token sees on average, forward and backward."""
    s, layers = shape.seq_len, shape.layers + x.mtp_layers
    if x.kv_lora_rank:
        per_head = x.qk_head_dim + x.qk_rope_dim + x.v_head_dim
        return 3 * layers * s * shape.heads * per_head
    d = x.head_dim or shape.hidden // shape.heads
    return 6 * layers * s * shape.heads * d


@pytest.mark.parametrize(
    ("workload", "size", "per_token", "active_card"),
    [
        # Qwen3 30B-A3B: "3.3B activated" (model card); DeepSeek V3: "37B activated"
        ("qwen3-mbridge", "30b-a3b", 2.3006281728e10, 3.3e9),
        ("deepseek-v3-mbridge", "671b", 2.59992950784e11, 37e9),
    ],
)
def test_moe_flops_per_token_agree_with_a_weight_count(workload, size, per_token, active_card):
    shape, extras = card(workload, size)
    ours = float(flops_breakdown("megatron-bridge", shape, extras).total)
    independent = 6 * active_weights(shape, extras) + causal_core(shape, extras)
    # the framework also counts each latent-attention norm as a column (q_lora + kv_lora
    # per layer, 1e-5 of the total): that is the only difference
    assert ours == pytest.approx(independent, rel=1e-4)
    assert ours == pytest.approx(per_token, rel=1e-12)  # worked out by hand (docs/metrics.md)
    # the main model's active weights with the input embedding are the card's activated
    # count (the card leaves the MTP module out)
    main = dataclasses.replace(extras, mtp_layers=0)
    active = active_weights(shape, main) + shape.hidden * shape.vocab
    assert active == pytest.approx(active_card, rel=0.05)


def test_a_dense_model_is_six_flops_per_weight_and_the_causal_core():
    shape, extras = card("llama3.1-mbridge", "70b")
    ours = float(flops_breakdown("megatron-bridge", shape, extras).total)
    assert ours == 6 * active_weights(shape, extras) + causal_core(shape, extras)
    # the spec's documents count the attention core over every position: exactly the causal
    # core more (the projections, MLP and output layer are the same terms)
    spec = float(flops_breakdown("llama", shape).total)
    assert spec - ours == pytest.approx(causal_core(shape, extras), rel=1e-12)


def test_the_mixture_terms_can_fail():
    shape, extras = card("qwen3-mbridge", "235b-a22b")
    ours = float(flops_breakdown("megatron-bridge", shape, extras).total)
    all_experts = dataclasses.replace(extras, topk=extras.experts)
    assert float(flops_breakdown("megatron-bridge", shape, all_experts).total) > 5 * ours
    with pytest.raises(ValueError, match="counts dense models only"):
        flops_breakdown("llama", shape, extras)
