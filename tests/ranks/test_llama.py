"""The embedded model (``llmbench.ranks.embedded.llama``) is Hugging Face transformers'
``LlamaForCausalLM`` with its defaults: the same parameter names and shapes, and with one
state dict loaded into both, the same logits, loss and gradients (fp32) and the same loss
under bf16 autocast, as the embedded trainer runs it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from llmbench.core.embedded_workload import SIZES  # noqa: E402
from llmbench.ranks.embedded.llama import LlamaForCausalLM, LlamaShape  # noqa: E402

TINY = SIZES["tiny"]
SHAPE = LlamaShape(
    vocab=TINY.vocab, hidden=TINY.hidden, ffn_hidden=TINY.ffn_hidden, layers=TINY.layers,
    heads=TINY.heads, query_groups=TINY.query_groups,
)  # fmt: skip


def reference_model() -> torch.nn.Module:
    config = transformers.LlamaConfig(
        vocab_size=SHAPE.vocab,
        hidden_size=SHAPE.hidden,
        intermediate_size=SHAPE.ffn_hidden,
        num_hidden_layers=SHAPE.layers,
        num_attention_heads=SHAPE.heads,
        num_key_value_heads=SHAPE.query_groups,
        max_position_embeddings=TINY.seq_len,
        tie_word_embeddings=False,
    )
    return transformers.LlamaForCausalLM(config)


@pytest.fixture(scope="module")
def pair() -> tuple[torch.nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    ours = LlamaForCausalLM(SHAPE)
    theirs = reference_model()
    theirs.load_state_dict(ours.state_dict())  # strict: the same names and shapes
    return ours, theirs


def batch() -> torch.Tensor:
    seed = torch.Generator().manual_seed(1)
    return torch.randint(0, SHAPE.vocab, (3, TINY.seq_len), generator=seed)


def test_the_same_parameters_by_name_and_shape(pair) -> None:
    ours, theirs = pair
    mine = {k: tuple(v.shape) for k, v in ours.state_dict().items()}
    reference = {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert mine == reference
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())


def test_initialisation_follows_the_reference(pair) -> None:
    ours, _ = pair
    weights = dict(ours.named_parameters())
    for name, weight in weights.items():
        if name.endswith("norm.weight"):
            assert torch.equal(weight, torch.ones_like(weight)), name
        else:  # normal(0, 0.02), as transformers' initializer_range
            assert abs(float(weight.detach().std()) - 0.02) < 0.002, name
            assert abs(float(weight.detach().mean())) < 0.002, name


def test_logits_loss_and_gradients_agree_in_fp32(pair) -> None:
    ours, theirs = pair
    ids = batch()
    ours.zero_grad()
    theirs.zero_grad()
    torch.testing.assert_close(ours(ids), theirs(input_ids=ids).logits, rtol=1e-5, atol=1e-5)
    mine = ours(ids, labels=ids)
    reference = theirs(input_ids=ids, labels=ids).loss
    torch.testing.assert_close(mine, reference, rtol=1e-5, atol=1e-6)
    mine.backward()
    reference.backward()
    grads = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        torch.testing.assert_close(param.grad, grads[name].grad, rtol=1e-4, atol=1e-6)


def test_the_bf16_autocast_loss_agrees(pair) -> None:
    ours, theirs = pair
    ids = batch()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        mine = ours(ids, labels=ids)
        reference = theirs(input_ids=ids, labels=ids).loss
    assert mine.dtype == reference.dtype == torch.float32
    torch.testing.assert_close(mine, reference, rtol=2e-3, atol=2e-3)


def test_a_wrong_model_is_told_apart(pair) -> None:
    # the comparison can fail: RoPE with another base gives other logits
    ours, theirs = pair
    ids = batch()
    saved = ours.model.inv_freq.clone()
    try:
        ours.model.inv_freq.mul_(0.5)
        assert not torch.allclose(ours(ids), theirs(input_ids=ids).logits, atol=1e-3)
    finally:
        ours.model.inv_freq.copy_(saved)
