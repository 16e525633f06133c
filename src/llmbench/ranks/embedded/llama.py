"""The embedded workload's model: a Llama decoder (RMSNorm, RoPE, grouped-query attention,
SwiGLU MLP, untied output layer) on ``torch.nn``, with Hugging Face transformers' parameter
names, initialisation and arithmetic (``LlamaForCausalLM`` with its defaults: RoPE base
10000, RMSNorm epsilon 1e-6, SDPA attention, no biases; tests/ranks/test_llama.py loads one
state dict into both and compares logits, loss and gradients).

Written here rather than imported: every rank of every embedded run imports its model, and
transformers' modeling code costs each CPU rank about a second of start-up beyond what
torch itself needs, for a model of a few hundred lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# heavy optional dependency (the embedded extra): this module is imported only by the
# embedded trainer, after it has checked the run needs torch
import torch
import torch.nn.functional as F
from torch import nn

INIT_STD = 0.02
"""Standard deviation of the normal initialisation of every Linear and Embedding weight."""
RMS_NORM_EPS = 1e-6
ROPE_BASE = 10000.0
IGNORE_INDEX = -100


@dataclass(frozen=True)
class LlamaShape:
    """The shape the model is built with (``RunSpec.model`` names these fields)."""

    vocab: int
    hidden: int
    ffn_hidden: int
    layers: int
    heads: int
    query_groups: int

    @classmethod
    def of(cls, model: dict[str, Any]) -> LlamaShape:
        return cls(**{name: int(model[name]) for name in cls.__dataclass_fields__})

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


class RMSNorm(nn.Module):
    """``weight * x / sqrt(mean(x^2) + eps)``, computed in float32."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_NORM_EPS)
        return self.weight * x.to(dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, shape: LlamaShape) -> None:
        super().__init__()
        d = shape.head_dim
        self.heads, self.groups, self.head_dim = shape.heads, shape.query_groups, d
        self.q_proj = nn.Linear(shape.hidden, shape.heads * d, bias=False)
        self.k_proj = nn.Linear(shape.hidden, shape.query_groups * d, bias=False)
        self.v_proj = nn.Linear(shape.hidden, shape.query_groups * d, bias=False)
        self.o_proj = nn.Linear(shape.heads * d, shape.hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        q = self.q_proj(x).view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, seq, self.groups, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq, self.groups, self.head_dim).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        repeat = self.heads // self.groups
        k = k.repeat_interleave(repeat, dim=1)
        v = v.repeat_interleave(repeat, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.head_dim**-0.5)
        return self.o_proj(out.transpose(1, 2).reshape(batch, seq, -1))


class MLP(nn.Module):
    def __init__(self, shape: LlamaShape) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(shape.hidden, shape.ffn_hidden, bias=False)
        self.up_proj = nn.Linear(shape.hidden, shape.ffn_hidden, bias=False)
        self.down_proj = nn.Linear(shape.ffn_hidden, shape.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, shape: LlamaShape) -> None:
        super().__init__()
        self.self_attn = Attention(shape)
        self.mlp = MLP(shape)
        self.input_layernorm = RMSNorm(shape.hidden)
        self.post_attention_layernorm = RMSNorm(shape.hidden)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    """The embedding, the decoder layers and the final norm (transformers' ``model.``)."""

    def __init__(self, shape: LlamaShape) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(shape.vocab, shape.hidden)
        self.layers = nn.ModuleList(DecoderLayer(shape) for _ in range(shape.layers))
        self.norm = RMSNorm(shape.hidden)
        dim = shape.head_dim
        inv_freq = 1.0 / (ROPE_BASE ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def rope(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin of every position, in float32 whatever the autocast, then in the
        hidden states' dtype."""
        positions = torch.arange(x.shape[1], device=x.device, dtype=torch.float)
        with torch.autocast(x.device.type, enabled=False):
            freqs = positions[:, None] * self.inv_freq.to(x.device)[None, :]
            angles = torch.cat((freqs, freqs), dim=-1)
            return angles.cos().to(x.dtype), angles.sin().to(x.dtype)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        cos, sin = self.rope(x)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    """Next-token prediction: logits over the vocabulary and, with labels, the mean
    cross-entropy of each position against the next token (computed in float32)."""

    def __init__(self, shape: LlamaShape) -> None:
        super().__init__()
        self.shape = shape
        self.model = Decoder(shape)
        self.lm_head = nn.Linear(shape.hidden, shape.vocab, bias=False)
        self.apply(_init_weights)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        """The logits, or with ``labels`` the loss (through ``forward``, as DDP needs)."""
        logits = self.lm_head(self.model(input_ids))
        if labels is None:
            return logits
        logits = logits.float()
        shifted = F.pad(labels, (0, 1), value=IGNORE_INDEX)[..., 1:]
        return F.cross_entropy(
            logits.view(-1, self.shape.vocab), shifted.reshape(-1), ignore_index=IGNORE_INDEX
        )


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=INIT_STD)
