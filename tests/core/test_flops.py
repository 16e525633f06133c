"""Model FLOPs per sample for each formula family, against the documents' worked numbers."""

from __future__ import annotations

import math

import pytest

from llmbench.core import metrics
from llmbench.core.catalog import load_catalog
from llmbench.core.flops import (
    ModelShape,
    flops_breakdown,
    model_flops_per_sample,
)
from tests.core.published_checks import flops_examples

CAT = load_catalog()


def _significant(value: float, digits: int) -> float:
    exponent = math.floor(math.log10(abs(value)))
    return round(value / 10**exponent, digits - 1) * 10**exponent


@pytest.mark.parametrize(
    ("workload", "size", "source", "digits"),
    [
        ("llama3.1-nemo", "8b", "llama31-nemo2-h100.txt", 3),  # 4.74E+14
        ("nemotron4-nemo", "15b", "nemotron4-nemo2-h100.txt", 4),  # 434.5e12
        ("llama2-maxtext", "70b", "maxtext-llama2-70b-h100.txt", 3),  # 1.82E+15
        ("nemotron4-nemo", "340b", "nemotron4-340b-h100-gb200-gb300-b200-runai.txt", 6),
    ],
)
def test_printed_flops_per_sample(workload, size, source, digits):
    spec = CAT.model(workload, size, source=source)
    assert spec.source == source and spec.printed_flops_per_sample is not None
    computed = model_flops_per_sample(spec)
    assert _significant(computed, digits) == pytest.approx(spec.printed_flops_per_sample)
    assert model_flops_per_sample(spec.flops_family, spec.shape) == computed


def test_proxy_flops_use_row_layers():
    row = CAT.row("llama3.1-nemo", "405b-proxy", "bf16", "h100", 32)
    full = model_flops_per_sample(row.model)
    proxy = model_flops_per_sample(row.model, row.model_shape)
    parts = flops_breakdown("llama", row.model.shape)
    per_layer = (parts.attention + parts.mlp) / row.model.shape.layers
    expected = row.seq_len * (per_layer * row.layers + parts.embedding)
    assert proxy == pytest.approx(float(expected)) and proxy < full


@pytest.mark.parametrize("example", flops_examples(), ids=lambda e: f"{e['workload']}-{e['size']}")
def test_worked_example_parts(example):
    """Parts the document prints; the 15B attention value is a known erratum."""
    spec = CAT.model(example["workload"], example["size"], source=example["source"])
    parts = flops_breakdown(spec.flops_family, spec.shape)
    assert parts.mlp == example["mlp_flops_per_token"]
    assert parts.embedding == example["embedding_flops_per_token"]
    if example["size"] != "15b":
        assert parts.attention == example["attention_flops_per_token"]


def test_nemotron_legacy_mlp_is_12_l_h_f_when_f_is_4h():
    shape = CAT.model("nemotron4-nemo", "15b").shape
    assert shape.ffn_hidden == 4 * shape.hidden
    legacy = flops_breakdown("nemotron-legacy", shape)
    assert legacy.mlp == flops_breakdown("nemotron-gqa", shape).mlp


def test_unknown_family():
    with pytest.raises(ValueError, match="flops_family='gpt'"):
        flops_breakdown("gpt", ModelShape(1, 8, 32, 1, 1, 10, 16))


def test_metric_helpers_agree():
    flops, gbs, step_time_s, gpus = 4.74e14, 128, 12.39, 8
    tflops = metrics.tflops_per_gpu(gbs, flops, step_time_s, gpus)
    assert tflops * 1e12 == pytest.approx(
        metrics.achieved_flops_per_gpu(gbs, flops, step_time_s, gpus)
    )
    assert metrics.mfu_from_tflops(tflops, 1979) == pytest.approx(
        metrics.mfu(gbs, flops, step_time_s, gpus, 1979e12)
    )
    tps = metrics.tokens_per_s(8192, gbs, step_time_s)
    assert metrics.tokens_per_s_per_gpu(tps, gpus) * gpus == pytest.approx(tps)
