"""Parallelism rules: all catalog rows pass; each bad override fails with one clear line."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmbench.core.catalog import load_catalog
from llmbench.core.catalog.rules import validate_row, with_overrides
from llmbench.errors import ConfigError
from tests.helpers import violations

CAT = load_catalog()
NEMO_8B = CAT.row("llama3.1-nemo", "8b", "bf16", "h100", 8)


@pytest.mark.parametrize(
    ("row", "overrides", "message"),
    [
        (NEMO_8B, {"tp": 3}, "tp=3: attention heads (32) must be divisible by tp"),
        (NEMO_8B, {"gbs": 130}, "gbs=130: must be divisible by mbs x dp (4)"),
        (NEMO_8B, {"ga": 7}, "ga=7: must equal gbs / (mbs x dp) = 32"),
        (NEMO_8B, {"vp": 2}, "vp=2: virtual pipeline needs pp > 1 (pp=1)"),
        (NEMO_8B, {"cp": 2, "seq_len": 4098}, "cp=2: sequence length (4098) must be divisible"),
        (NEMO_8B, {"gpus": 48}, "gpus=48: is not a scale of llama3.1-nemo 8b bf16 on h100"),
        (NEMO_8B, {"ep": 2}, "ep=2: 8b has no experts"),
        (NEMO_8B, {"dp": 3}, "dp=3: tp x pp x cp x dp (6) must equal gpus (8)"),
        (NEMO_8B, {"nodes": 3}, "nodes=3: cannot be overridden"),
        (NEMO_8B, {"tp": 0}, "tp=0: must be a positive integer"),
        (
            CAT.row("llama3.1-nemo", "70b", "bf16", "h100", 64),
            {"pp": 8, "vp": 3},
            "pp=8: layers (80) or layers + 2 (embedding and loss stages) must be divisible "
            "by pp x vp (24)",
        ),
        (
            CAT.row("llama3.1-nemo", "405b", "bf16", "h100", 512),
            {"tp": 16},
            "tp=16: query groups (8) must be divisible by tp",
        ),
        (
            CAT.row("llama2-maxtext", "70b", "bf16", "h100", 512),
            {"dp": 2},
            "dp=2: tp x pp x cp x fsdp x dp (256) must equal gpus (512)",
        ),
        (
            CAT.row("llama2-maxtext", "70b", "bf16", "h100", 64),
            {"fsdp": True},
            "fsdp=True: MaxText needs the FSDP degree",
        ),
    ],
)
def test_bad_override_one_line(row, overrides, message):
    with pytest.raises(ConfigError) as err:
        with_overrides(row, **overrides)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(message)


def test_overrides_rederive_dependents():
    row = with_overrides(NEMO_8B, tp=2)
    assert (row.dp, row.ga) == (2, 64)
    row = with_overrides(NEMO_8B, gpus=16)
    assert (row.nodes, row.dp, row.gbs, row.ga) == (2, 8, 128, 16)
    mb = with_overrides(CAT.row("llama3.1-mbridge", "405b", "fp8", "gb300", 128), gpus=256)
    assert (mb.nodes, mb.dp, mb.gbs, mb.ga) == (64, 128, 128, 1)
    mx = with_overrides(CAT.row("llama2-maxtext", "70b", "bf16", "h100", 512), fsdp=64)
    assert (mx.dp, mx.ga) == (8, 1)


def test_uneven_405b_split_is_allowed_but_rule_is_real():
    row = CAT.row("llama3.1-nemo", "405b", "fp8", "h100", 1024)
    assert (row.layers, row.pp, row.vp) == (126, 8, 8)
    assert violations(row) == []
    with pytest.raises(ConfigError, match=r"^pp=8: layers"):
        validate_row(dataclasses.replace(row, layers=120))


def test_fp8_unsupported_gpu_rejected():
    gpu = dataclasses.replace(NEMO_8B.gpu, peak_tflops={"bf16": 312.0})
    with pytest.raises(ConfigError, match=r"^dtype=fp8: not supported on h100; allowed: bf16$"):
        validate_row(dataclasses.replace(NEMO_8B, dtype="fp8", gpu=gpu))


def test_less_than_one_node_is_allowed():
    small = dataclasses.replace(NEMO_8B, gpus=4, nodes=1, dp=2, gbs=64, listed_scales=())
    assert violations(small) == []


@settings(max_examples=200, deadline=None)
@given(
    tp=st.sampled_from([1, 2, 3, 4, 8]),
    pp=st.sampled_from([1, 2, 4, 8]),
    cp=st.sampled_from([1, 2, 4]),
    gpus=st.sampled_from([8, 16, 32, 64, 128]),
)
def test_valid_overrides_satisfy_world_size(tp, pp, cp, gpus):
    """Whatever validates obeys the world-size and batch rules; nothing else escapes."""
    try:
        row = with_overrides(NEMO_8B, tp=tp, pp=pp, cp=cp, gpus=gpus)
    except ConfigError as err:
        assert "\n" not in str(err)
        return
    assert row.tp * row.pp * row.cp * row.dp == row.gpus
    assert row.ga * row.mbs * row.dp == row.gbs
    assert 32 % row.tp == 0 and 8 % row.tp == 0
