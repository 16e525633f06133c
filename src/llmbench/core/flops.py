"""Model FLOPs per sample (forward + backward, GBS = 1), as the spec's documents and the
reference frameworks define them.

All formulas are ``seq_len * (attention + mlp + embedding)``; the factor 3 for
forward + backward is folded into the constants (e.g. ``6 * vocab * hidden``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol


@dataclass(frozen=True)
class ModelShape:
    """Transformer shape; ``query_groups == heads`` means plain multi-head attention."""

    layers: int
    hidden: int
    ffn_hidden: int
    heads: int
    query_groups: int
    vocab: int
    seq_len: int


@dataclass(frozen=True)
class ModelExtras:
    """What a dense grouped-query shape (``ModelShape``) does not say; every field 0 means
    absent. ``head_dim``: channels per attention head (0: hidden / heads). Mixture of
    experts: ``experts`` routed experts of which ``topk`` run per token, each with
    ``moe_ffn_hidden`` channels, shared experts of ``shared_ffn_hidden`` channels in all,
    and the first ``dense_layers`` layers with a dense MLP of ``ffn_hidden``. Multi-head
    latent attention (DeepSeek) when ``kv_lora_rank`` > 0: ``q_lora_rank`` (0: no query
    compression), ``qk_head_dim``, ``qk_rope_dim`` and ``v_head_dim`` per head.
    ``mtp_layers``: multi-token prediction layers after the decoder."""

    head_dim: int = 0
    experts: int = 0
    topk: int = 0
    moe_ffn_hidden: int = 0
    shared_ffn_hidden: int = 0
    dense_layers: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_head_dim: int = 0
    qk_rope_dim: int = 0
    v_head_dim: int = 0
    mtp_layers: int = 0

    def as_dict(self) -> dict[str, int]:
        """The fields that are set (a dense model's is empty)."""
        return {name: value for name, value in self.__dict__.items() if value}

    @classmethod
    def from_dict(cls, values: dict[str, int] | None) -> ModelExtras:
        return cls(**{k: int(v) for k, v in (values or {}).items()})


NO_EXTRAS = ModelExtras()


# --- Formula families (every document's formula, exact arithmetic) ---

FLOPS_FAMILIES = ("llama", "nemotron-gqa", "nemotron-legacy", "megatron-bridge")
"""FLOPs formula families: which per-token attention / MLP / embedding terms a document uses."""


@dataclass(frozen=True)
class FlopsBreakdown:
    """Model FLOPs per token (forward + backward) by part; multiply by seq_len for a sample."""

    attention: Fraction
    mlp: Fraction
    embedding: Fraction

    @property
    def total(self) -> Fraction:
        """attention + mlp + embedding, per token."""
        return self.attention + self.mlp + self.embedding


class HasFlopsFamily(Protocol):
    """Anything naming a formula family and a shape (``llmbench.core.catalog.ModelSpec``)."""

    @property
    def flops_family(self) -> str: ...

    @property
    def shape(self) -> ModelShape: ...


def _gqa_attention(shape: ModelShape) -> Fraction:
    """12 L h^2 (1 + g/a + s/h): llama31-nemo2-h100.txt, maxtext-llama2-70b-h100.txt and
    nemotron4-340b-h100-gb200-gb300-b200-runai.txt."""
    L, h = shape.layers, shape.hidden
    ratio = 1 + Fraction(shape.query_groups, shape.heads) + Fraction(shape.seq_len, h)
    return 12 * L * h * h * ratio


def _embedding(shape: ModelShape) -> Fraction:
    """6 V h, in every document."""
    return Fraction(6 * shape.vocab * shape.hidden)


def _megatron_bridge(shape: ModelShape, extras: ModelExtras) -> FlopsBreakdown:
    """Megatron-Bridge's own count (``num_floating_point_operations`` and
    ``transformer_flops`` in MB:src/megatron/bridge/training/utils/flop_utils.py@b50da4c,
    the TFLOP/s/GPU it prints), per token at sequence length s, every matrix product
    counted 6 times (forward, two backward products, multiply-add):

    - attention, per layer (decoder layers + MTP layers): grouped-query projections
      h (q + 2 kv) + q h with q = heads x head_dim, kv = query_groups x head_dim, and the
      causal core q s (QK^T and AV over half the positions); or multi-head latent
      attention: q_lora (h + heads (qk + rope) + 1) + kv_lora (h + heads (qk + v) + 1)
      + h rope + heads v h, core s heads (qk + rope) / 2 + s heads v / 2;
    - mlp: 3 channels of SwiGLU per dense layer (ffn_hidden), per MoE layer topk routed
      experts (moe_ffn_hidden) and the shared experts; MTP layers count as MoE layers
      when the last decoder layer is one; MTP's projection of 2h to h and its norms,
      3 h + 2 h^2 per MTP layer;
    - embedding: the output layer, h x vocab (the vocabulary as padded), once for the
      model and once per MTP layer. The input embedding is a lookup: not counted.
    Routers, norms, softmax and activations are not counted.
    """
    h, s, L = shape.hidden, shape.seq_len, shape.layers
    mtp = extras.mtp_layers
    attention_layers = L + mtp
    if extras.experts:
        moe_layers = L - extras.dense_layers + mtp  # the last decoder layer is an MoE one
        dense_layers = extras.dense_layers
    else:
        moe_layers, dense_layers = 0, L + mtp
    if extras.kv_lora_rank:
        heads, qk, rope, v = shape.heads, extras.qk_head_dim, extras.qk_rope_dim, extras.v_head_dim
        q_term = (
            extras.q_lora_rank * (h + heads * (qk + rope) + 1)
            if extras.q_lora_rank
            else h * heads * (qk + rope)
        )
        kv_term = extras.kv_lora_rank * (h + heads * (qk + v) + 1) + h * rope
        projections = q_term + kv_term + heads * v * h
        core = Fraction(s * heads * (qk + rope), 2) + Fraction(s * heads * v, 2)
    else:
        head_dim = extras.head_dim or shape.hidden // shape.heads
        q, kv = shape.heads * head_dim, shape.query_groups * head_dim
        projections = h * (q + 2 * kv) + q * h
        core = Fraction(q * s)
    attention = 6 * attention_layers * (projections + core)
    mlp = 6 * h * 3 * (
        shape.ffn_hidden * dense_layers
        + extras.moe_ffn_hidden * extras.topk * moe_layers
        + extras.shared_ffn_hidden * moe_layers
    ) + 6 * mtp * (3 * h + 2 * h * h)
    embedding = 6 * h * shape.vocab * (mtp + 1)
    return FlopsBreakdown(Fraction(attention), Fraction(mlp), Fraction(embedding))


def flops_breakdown(
    family: str, shape: ModelShape, extras: ModelExtras = NO_EXTRAS
) -> FlopsBreakdown:
    """Per-token FLOPs of one formula family, exactly (as fractions).

    - ``llama``: attention 12 L h^2 (1 + g/a + s/h), mlp 18 L f h, embedding 6 V h
      (llama31-nemo2-h100.txt; maxtext-llama2-70b-h100.txt, whose "normalization flops"
      term is named but never defined nor counted in its worked example).
    - ``nemotron-gqa``: attention as llama, mlp 12 L h f, embedding 6 V h
      (nemotron4-340b-h100-gb200-gb300-b200-runai.txt).
    - ``nemotron-legacy``: attention 24 L h^2 + 12 L h s, mlp 48 L h^2, embedding 6 V h
      (nemotron4-nemo2-h100.txt; ignores query groups, and 48 L h^2 = 12 L h f when f = 4h).
    - ``megatron-bridge``: Megatron-Bridge's own count, for dense, mixture-of-experts and
      latent-attention models with ``extras`` (``_megatron_bridge``): the exemplar
      releases' published TFLOP/s/GPU.
    The document families take no extras.
    """
    L, h, s = shape.layers, shape.hidden, shape.seq_len
    if family == "megatron-bridge":
        return _megatron_bridge(shape, extras)
    if extras != NO_EXTRAS:
        raise ValueError(f"flops_family={family!r} counts dense models only; extras given")
    if family == "llama":
        return FlopsBreakdown(
            _gqa_attention(shape), Fraction(18 * L * shape.ffn_hidden * h), _embedding(shape)
        )
    if family == "nemotron-gqa":
        return FlopsBreakdown(
            _gqa_attention(shape), Fraction(12 * L * h * shape.ffn_hidden), _embedding(shape)
        )
    if family == "nemotron-legacy":
        attention = Fraction(24 * L * h * h + 12 * L * h * s)
        return FlopsBreakdown(attention, Fraction(48 * L * h * h), _embedding(shape))
    allowed = ", ".join(FLOPS_FAMILIES)
    raise ValueError(f"flops_family={family!r} is unknown; allowed: {allowed}")


def model_flops_per_sample(
    model_spec_or_family: HasFlopsFamily | str,
    shape: ModelShape | None = None,
    extras: ModelExtras | None = None,
) -> float:
    """Model FLOPs per sample (GBS = 1): seq_len * (attention + mlp + embedding).

    Pass a ``ModelSpec`` (its own shape unless ``shape`` is given, e.g. a proxy's layers)
    or a family name and a shape. Llama 3.1 8B 4.74e14, Nemotron4 15B 434.5e12 (legacy),
    Llama 2 70B 1.82e15, Nemotron4 340B 8.62124e15 (gqa), as the documents print them.
    """
    if isinstance(model_spec_or_family, str):
        family = model_spec_or_family
        if shape is None:
            raise ValueError("model_flops_per_sample(family, shape) needs a shape")
    else:
        family = model_spec_or_family.flops_family
        shape = shape if shape is not None else model_spec_or_family.shape
        if extras is None:
            extras = getattr(model_spec_or_family, "extras", None)
    return float(shape.seq_len * flops_breakdown(family, shape, extras or NO_EXTRAS).total)
