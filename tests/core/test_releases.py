"""The versioned catalog: every row belongs to a reference release through its document; a
sweep entry names its release (dgxc-2025, the spec's documents, by default, so a config that
names none keeps its meaning; `spec`, its former name, still means it); release v26.08
holds exemplar-performance v26.08.00's recipes."""

from __future__ import annotations

import re

import pytest

from llmbench.core.catalog import load_catalog
from llmbench.core.config import run_specs, validate_config
from llmbench.core.runspec import GROUP_ID_PATTERN, RUN_ID_PATTERN, RunSpec
from llmbench.errors import ConfigError
from tests.helpers import tiny_sweep

CATALOG = load_catalog()
V2608 = "v26.08"


def test_releases_and_their_documents():
    assert CATALOG.releases() == ["dgxc-2025", V2608]
    spec, later = CATALOG.release("dgxc-2025"), CATALOG.release(V2608)
    assert len(spec.documents) == 5 and later.documents == ("exemplar-v26.08",)
    assert later.container == "nvcr.io/nvidia/nemo:26.06.01" and later.date == "2026-08-18"
    assert all(CATALOG.document(d).tag for d in (*spec.documents, *later.documents))
    with pytest.raises(ConfigError, match=r"release=v99\.01 is not a release; allowed: dgxc-20"):
        CATALOG.release("v99.01")


def test_the_default_release_is_the_spec_and_every_row_has_a_precision():
    spec_rows = CATALOG.rows(include_superseded=True)
    every = CATALOG.rows(include_superseded=True, release=None)
    assert {r.release for r in spec_rows} == {"dgxc-2025"}
    assert len(every) == len(spec_rows) + len(CATALOG.rows(release=V2608))
    assert CATALOG.workloads() == [
        "llama2-maxtext", "llama3.1-mbridge", "llama3.1-nemo", "nemotron4-nemo",
    ]  # fmt: skip
    assert CATALOG.workloads(V2608) == ["deepseek-v3-mbridge", "llama3.1-mbridge", "qwen3-mbridge"]
    # a document's FP8 scaling: NeMo 2 delayed, Megatron-Bridge current
    precisions = {(r.workload, r.dtype): r.precision for r in spec_rows}
    assert precisions[("llama3.1-nemo", "fp8")] == "fp8-delayed"
    assert precisions[("llama3.1-mbridge", "fp8")] == "fp8-current"
    assert precisions[("llama3.1-nemo", "bf16")] == "bf16"


def row(workload, size, dtype, gpu, gpus):
    return CATALOG.row(workload, size, dtype, gpu, gpus, release=V2608)


def test_the_v2608_llama_rows_follow_the_reference():
    # GBS = GPUs x 4 (70B) and x 6 (405B, Blackwell); H100 405B 1536 at 1024 GPUs
    assert row("llama3.1-mbridge", "70b", "fp8", "gb300", 512).gbs == 2048
    assert row("llama3.1-mbridge", "405b", "nvfp4", "gb200", 256).gbs == 1536
    assert row("llama3.1-mbridge", "405b", "fp8", "h100", 1024).gbs == 1536
    # B200 / B300 70B: FP8 current scaling with FSDP at 64 GPUs, MXFP8 from 128
    small, large = (row("llama3.1-mbridge", "70b", "fp8", "b200", n) for n in (64, 128))
    assert (small.precision, small.fsdp, small.offload_layers) == ("fp8-current", True, 5)
    assert (large.precision, large.tp, large.pp, large.vp) == ("mxfp8", 2, 4, 5)
    assert row("llama3.1-mbridge", "70b", "nvfp4", "b300", 256).precision == "nvfp4"
    gb200 = row("llama3.1-mbridge", "70b", "nvfp4", "gb200", 64)
    assert gb200.cuda_graphs and (gb200.tp, gb200.pp, gb200.vp, gb200.ga) == (2, 4, 5, 32)
    # the spec's row for the same key is the v25.10 one: GBS = GPUs x 2
    assert CATALOG.row("llama3.1-mbridge", "70b", "fp8", "gb300", 64).gbs == 128
    with pytest.raises(ConfigError, match=r"gpus=96 is not a scale .* allowed: 64, 128"):
        row("llama3.1-mbridge", "70b", "fp8", "gb300", 96)
    with pytest.raises(ConfigError, match=r"gpu_type=h100 .* nvfp4 in release v26.08; allowed: b2"):
        row("llama3.1-mbridge", "70b", "nvfp4", "h100", 64)


def test_the_moe_rows_have_expert_parallelism():
    qwen = row("qwen3-mbridge", "235b-a22b", "fp8", "gb300", 512)
    assert (qwen.precision, qwen.ep, qwen.etp, qwen.vp, qwen.gbs) == ("mxfp8", 32, 1, 12, 16384)
    assert row("qwen3-mbridge", "30b-a3b", "bf16", "h100", 32).ep == 16
    ds = row("deepseek-v3-mbridge", "671b", "fp8", "h100", 1024)
    assert (ds.precision, ds.tp, ds.pp, ds.vp, ds.ep, ds.gbs) == (
        "fp8-blockwise", 2, 8, 2, 64, 16384,
    )  # fmt: skip
    # at 128 GPUs the launch script's overrides: GB300 PP 4, VP 4, EP 32
    at_128 = row("deepseek-v3-mbridge", "671b", "bf16", "gb300", 128)
    assert (at_128.pp, at_128.vp, at_128.ep) == (4, 4, 32)
    assert CATALOG.model("deepseek-v3-mbridge", "671b").experts == 256


def sweep(**entry):
    base = {"workload": "llama3.1-mbridge", "sizes": ["70b"], "dtypes": ["fp8"],
            "gpu_type": "gb300", "scales": [64]}  # fmt: skip
    return {**base, **entry}


def test_a_config_mixing_releases_gives_distinct_runs():
    config = validate_config({"sweeps": [sweep(), sweep(release=V2608), tiny_sweep((1,))]})
    spec_run, later, tiny = run_specs(config)
    assert spec_run.run_id == "llama3.1-mbridge_70b_fp8_gb300x64_perf"
    assert later.run_id == "llama3.1-mbridge_70b_fp8_gb300x64-v26.08_perf"
    assert later.group_id == "llama3.1-mbridge_70b_gb300_weak-v26.08"
    assert (spec_run.global_batch_size, later.global_batch_size) == (128, 256)
    assert (later.release, later.precision) == (V2608, "fp8-current")
    assert spec_run.image == "nvcr.io/nvidia/nemo:25.09.00"
    assert later.image == "nvcr.io/nvidia/nemo:26.06.01"
    for spec in (spec_run, later, tiny):
        assert re.fullmatch(RUN_ID_PATTERN, spec.run_id), spec.run_id
        assert re.fullmatch(GROUP_ID_PATTERN, spec.group_id), spec.group_id
    # a dgxc-2025 run's record is what it was: no release, no precision field
    assert "release" not in spec_run.to_dict() and later.to_dict()["release"] == V2608


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"release": "v99.01"}, "sweeps[0].release: 'v99.01' is not a release; allowed: "
                                "dgxc-2025, v26.08 (any case, surrounding spaces ignored; spec "
                                "is the former name of dgxc-2025)"),
        ({"release": "latest"}, "sweeps[0].release: 'latest' is not a release"),
        ({"workload": "qwen3-mbridge", "sizes": ["30b-a3b"]}, "release=dgxc-2025 is not a release"),
    ],
)  # fmt: skip
def test_a_bad_release_is_one_line(entry, message):
    with pytest.raises(ConfigError) as err:
        run_specs(validate_config({"sweeps": [sweep(**entry)]}))
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("written", ["spec", " SPEC ", "dgxc-2025"])
def test_the_former_name_spec_is_dgxc_2025(written):
    """`release: spec` (the default release's former name) is dgxc-2025: the same runs,
    ids and records as an entry that names no release."""
    assert CATALOG.release_name(written) == CATALOG.release_name(written, True) == "dgxc-2025"
    named = run_specs(validate_config({"sweeps": [sweep(release=written)]}))
    unnamed = run_specs(validate_config({"sweeps": [sweep()]}))
    assert [s.to_dict() for s in named] == [s.to_dict() for s in unnamed]
    assert (named[0].release, named[0].run_id) == ("dgxc-2025", unnamed[0].run_id)
    assert named[0].run_id == "llama3.1-mbridge_70b_fp8_gb300x64_perf"


def test_a_stored_run_spec_naming_spec_reads_back_in_dgxc_2025():
    """A run_spec.json that names the release by its former name reads back as one that
    names none: release dgxc-2025, the same run id and record."""
    (run,) = run_specs(validate_config({"sweeps": [sweep()]}))
    stored = {**run.to_dict(), "release": "spec", "precision": ""}
    back = RunSpec.from_dict(stored)
    assert (back.release, back.run_id) == ("dgxc-2025", run.run_id)
    assert back.to_dict() == run.to_dict()


def test_the_embedded_workload_has_no_other_release():
    with pytest.raises(ConfigError, match="release"):
        run_specs(validate_config({"sweeps": [{**tiny_sweep((1,)), "release": V2608}]}))
