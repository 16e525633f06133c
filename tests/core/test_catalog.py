"""The catalog holds every workload / size / dtype / GPU / scale of the spec, validated."""

from __future__ import annotations

import pytest

from llmbench.core.catalog import load_catalog
from llmbench.core.catalog.parity import reference_image
from llmbench.errors import ConfigError
from tests.helpers import violations

NEWER_340B = "nemotron4-340b-h100-gb200-gb300-b200-runai.txt"
OLDER_340B = "nemotron4-nemo2-h100.txt"


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_workloads_and_gpus(cat):
    assert cat.workloads() == [
        "llama2-maxtext",
        "llama3.1-mbridge",
        "llama3.1-nemo",
        "nemotron4-nemo",
    ]
    assert cat.gpu("h100").gpus_per_node == 8 and cat.gpu("b200").gpus_per_node == 8
    assert cat.gpu("gb200").gpus_per_node == 4 and cat.gpu("gb300").arch == "aarch64"
    assert cat.gpu("h100").arch == "x86_64"
    assert cat.gpu("b200").peak_tflops == {"bf16": 2250, "fp8": 4500, "nvfp4": 9000}


def test_every_row_including_superseded_is_valid(cat):
    rows = cat.rows(include_superseded=True)
    assert rows
    assert all(violations(r) == [] for r in rows)


@pytest.mark.parametrize(
    ("workload", "count"),
    [("llama3.1-nemo", 34), ("nemotron4-nemo", 64), ("llama3.1-mbridge", 51),
     ("llama2-maxtext", 12)],
)  # fmt: skip
def test_row_counts(cat, workload, count):
    rows = cat.rows(workload)
    assert len(rows) == count
    keys = {(r.size, r.dtype, r.gpu_type, r.gpus, r.scaling) for r in rows}
    assert len(keys) == len(rows)


def test_llama70b_bf16_and_fp8_differ(cat):
    bf16 = cat.row("llama3.1-nemo", "70b", "bf16", "h100", 64)
    fp8 = cat.row("llama3.1-nemo", "70b", "fp8", "h100", 64)
    assert (bf16.tp, bf16.pp, bf16.cp, bf16.vp) == (4, 4, 2, 5)
    assert (fp8.tp, fp8.pp, fp8.cp, fp8.vp) == (4, 8, 1, 5)


def test_proxy_layers(cat):
    layers = {g: cat.row("llama3.1-nemo", "405b-proxy", "bf16", "h100", g).layers
              for g in (32, 64, 128)}  # fmt: skip
    assert layers == {32: 8, 64: 30, 128: 62}
    assert cat.row("llama3.1-nemo", "405b-proxy", "fp8", "h100", 64).model_shape.layers == 30


def test_nemotron_340b_both_sources_newer_default(cat):
    new = cat.row("nemotron4-nemo", "340b", "bf16", "h100", 256)
    old = cat.row("nemotron4-nemo", "340b", "bf16", "h100", 256, source=OLDER_340B)
    assert new.source == NEWER_340B and new.vp == 12
    assert old.vp is None and old.superseded_by == NEWER_340B
    assert cat.model("nemotron4-nemo", "340b").flops_family == "nemotron-gqa"
    assert cat.model("nemotron4-nemo", "340b", source=OLDER_340B).flops_family == "nemotron-legacy"
    assert new.model.source == NEWER_340B and old.model.source == OLDER_340B


def test_strong_scaling_gbs_fixed_ga_shrinks(cat):
    rows = cat.rows("nemotron4-nemo", gpu_type="b200", dtype="fp8", scaling="strong")
    assert {r.gbs for r in rows} == {512}
    assert [r.ga for r in sorted(rows, key=lambda r: r.gpus)] == [128, 64, 32, 16]
    assert not cat.rows("nemotron4-nemo", gpu_type="h100", scaling="strong")


def test_mbridge_formulas_expand_to_power_of_two_scales(cat):
    assert cat.scales("llama3.1-mbridge", "405b", "fp8", "gb300") == [128, 256, 512, 1024]
    assert cat.scales("llama3.1-mbridge", "405b", "fp8", "h100") == [1024]
    row = cat.row("llama3.1-mbridge", "405b", "fp8", "b200", 256)
    assert (row.dp, row.gbs, row.ga, row.nodes) == (256 // 64, 256 // 2, 32, 32)
    assert dict(row.formulas) == {"dp": "GPUs/64", "gbs": "GPUs/2"}


def test_mbridge_unlisted_scale_inside_range(cat):
    row = cat.row("llama3.1-mbridge", "8b", "fp8", "gb300", 24)
    assert (row.dp, row.gbs, row.ga, row.nodes) == (24, 24 * 16, 8, 6)
    with pytest.raises(ConfigError, match=r"^gpus=10: must be a multiple of 4"):
        cat.row("llama3.1-mbridge", "8b", "fp8", "gb300", 10)
    with pytest.raises(ConfigError, match=r"gpus=2048 is not a scale of .*allowed: 8-128"):
        cat.row("llama3.1-mbridge", "8b", "fp8", "gb300", 2048)


def test_maxtext_fsdp_dp(cat):
    rows = sorted(cat.rows("llama2-maxtext", dtype="bf16"), key=lambda r: r.gpus)
    assert [r.fsdp for r in rows] == [64, 128, 256, 128, 128, 128]
    assert all(r.fsdp * r.dp == r.gpus and r.gbs == r.gpus * r.mbs for r in rows)
    # the images are the reference's, per document and GPU type (catalog/parity.yaml)
    assert reference_image("llama2-maxtext", rows[0].source, "h100") == (
        "ghcr.io/nvidia/jax:maxtext-2024-12-09"
    )


def test_row_error_message_names_value_and_allowed(cat):
    with pytest.raises(ConfigError) as err:
        cat.row("llama3.1-nemo", "8b", "bf16", "h100", 48)
    assert str(err.value) == (
        "gpus=48 is not a scale of llama3.1-nemo 8b bf16 on h100; allowed: 8, 16, 32, 64, 128"
    )
    with pytest.raises(ConfigError, match=r"workload=nope .*allowed: llama2-maxtext"):
        cat.row("nope", "8b", "bf16", "h100", 8)
    with pytest.raises(ConfigError, match=r"dtype=bf16 is not a dtype of .*allowed: fp8"):
        cat.row("llama3.1-mbridge", "8b", "bf16", "h100", 8)
    with pytest.raises(ConfigError, match=r"gpu_type=gb200 .*allowed: h100"):
        cat.row("llama3.1-nemo", "8b", "bf16", "gb200", 8)
    with pytest.raises(ConfigError, match="size=13b"):
        cat.rows("llama3.1-nemo", size="13b")


def test_checkpoints_and_profiling(cat):
    (ckpt,) = cat.checkpoints("llama3.1-nemo", "405b")
    assert (ckpt.size_gb, ckpt.save_scale_min, ckpt.save_scale_max) == (5200, 512, 2048)
    assert ckpt.load_min_scale_by_gpu == {"h100": 1024}
    newer = [c for c in cat.checkpoints("nemotron4-nemo", "340b") if c.source == NEWER_340B]
    assert newer[0].load_min_scale_by_gpu["gb200"] == 128
    old = cat.profiling(cat.row("nemotron4-nemo", "15b", "bf16", "h100", 16))
    new = cat.profiling(cat.row("nemotron4-nemo", "340b", "bf16", "gb200", 128))
    mb = cat.profiling(cat.row("llama3.1-mbridge", "8b", "fp8", "h100", 8))
    assert (old.start_step, old.stop_step) == (20, 25)
    assert (new.start_step, new.stop_step, new.ranks) == (45, 50, "0-8")
    assert mb.ranks == "all"
    assert cat.profiling(cat.row("llama2-maxtext", "70b", "bf16", "h100", 64)) is None
