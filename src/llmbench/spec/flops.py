"""Model FLOPs per sample (forward + backward, GBS = 1), as the spec's documents define them.

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


# --- Formula families (every document's formula, exact arithmetic) ---

FLOPS_FAMILIES = ("llama", "nemotron-gqa", "nemotron-legacy")
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
    """Anything naming a formula family and a shape (``llmbench.spec.catalog.ModelSpec``)."""

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


def flops_breakdown(family: str, shape: ModelShape) -> FlopsBreakdown:
    """Per-token FLOPs of one formula family, exactly (as fractions).

    - ``llama``: attention 12 L h^2 (1 + g/a + s/h), mlp 18 L f h, embedding 6 V h
      (llama31-nemo2-h100.txt; maxtext-llama2-70b-h100.txt, whose "normalization flops"
      term is named but never defined nor counted in its worked example).
    - ``nemotron-gqa``: attention as llama, mlp 12 L h f, embedding 6 V h
      (nemotron4-340b-h100-gb200-gb300-b200-runai.txt).
    - ``nemotron-legacy``: attention 24 L h^2 + 12 L h s, mlp 48 L h^2, embedding 6 V h
      (nemotron4-nemo2-h100.txt; ignores query groups, and 48 L h^2 = 12 L h f when f = 4h).
    """
    L, h, s = shape.layers, shape.hidden, shape.seq_len
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
    model_spec_or_family: HasFlopsFamily | str, shape: ModelShape | None = None
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
    return float(shape.seq_len * flops_breakdown(family, shape).total)
