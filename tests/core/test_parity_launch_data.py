"""The last launch differences of the v26.08 pack, each against the reference's rule as
written here from its code, and the one vocabulary FLOPs count with."""

from __future__ import annotations

import dataclasses

from llmbench.core.catalog import load_catalog
from llmbench.core.catalog import parity as parity_data
from llmbench.core.runspec import RunSpec
from llmbench.ranks.entrypoints import megatron_bridge
from llmbench.ranks.entrypoints.common import EntryOptions
from tests.helpers import release_runs

CATALOG = load_catalog()


V2608 = release_runs("v26.08")
SPEC = release_runs("dgxc-2025")
MOE = [s for s in V2608 if s.workload != "llama3.1-mbridge"]
OPGWOS = ("optimizer.overlap_param_gather_with_optimizer_step",
          "comm_overlap.overlap_param_gather_with_optimizer_step")  # fmt: skip


def _overrides(spec: RunSpec, **options: object) -> dict[str, object]:
    return megatron_bridge.overrides(EntryOptions(spec, **options))


# --- overlap_param_gather_with_optimizer_step, fp8_output_proj, backend, checkpoint ---


def _reference_opgwos(spec: RunSpec) -> bool:
    """MB:scripts/performance/utils/overrides.py@b50da4c#L521-534: DP = GPUs / (TP x PP x
    CP), DP, PP and VP all > 1, the precision not fp8_mx or nvfp4 (the optimizer is adam)."""
    p = spec.parallelism
    dp = spec.gpus // (p["tp"] * p["pp"] * p["cp"])
    return dp > 1 and p["pp"] > 1 and (p["vp"] or 1) > 1 and spec.precision not in (
        "mxfp8", "nvfp4")  # fmt: skip


def test_param_gather_overlaps_the_optimizer_step_by_the_references_rule() -> None:
    on = []
    for spec in V2608:
        o = _overrides(spec)
        expected = _reference_opgwos(spec)
        for name in OPGWOS:
            assert o.get(name, False) is expected, (spec.run_id, name)
        if expected and spec.workload != "llama3.1-mbridge":
            on.append(spec.run_id)
    assert len(on) == 14  # Qwen3 235B bf16 H100/B200, DeepSeek bf16 and H100 fp8 rows
    assert {s.split("_")[0] for s in on} == {"qwen3-mbridge", "deepseek-v3-mbridge"}


def test_deepseek_mxfp8_sets_fp8_output_proj_only_where_its_builder_does() -> None:
    seen = set()
    for spec in MOE:
        if spec.workload != "deepseek-v3-mbridge" or spec.precision != "mxfp8":
            continue
        o = _overrides(spec)
        # deepseek_llm_pretrain.py@b50da4c: GB300 L85-86, GB200 L125-126, B300 L202-203;
        # the B200 builder (L222-256) has no such line
        expected = spec.gpu_type in ("gb300", "gb200", "b300")
        assert o.get("model.fp8_output_proj", False) is expected, spec.run_id
        seen.add(spec.gpu_type)
    assert seen == {"gb300", "gb200", "b300", "b200"}


def test_qwen3_235b_alltoall_rows_clear_the_flex_backend() -> None:
    for spec in MOE:
        o = _overrides(spec)
        alltoall = o.get("model.moe_token_dispatcher_type") == "alltoall"
        if spec.workload == "qwen3-mbridge" and alltoall:
            assert spec.gpu_type in ("h100", "b200") and spec.precision == "bf16"
            assert o["model.moe_flex_dispatcher_backend"] is None, spec.run_id
        else:
            assert o.get("model.moe_flex_dispatcher_backend") != "deepep", spec.run_id


def test_megatron_fsdp_rows_load_no_checkpoint_but_the_load_variant_does() -> None:
    fsdp = [s for s in V2608 if s.parallelism["fsdp"]]
    assert len(fsdp) == 10 and {s.workload for s in fsdp} == {"llama3.1-mbridge"}
    for spec in fsdp:
        assert _overrides(spec)["checkpoint.load"] is None, spec.run_id  # overrides.py L103
    loading = _overrides(dataclasses.replace(fsdp[0], variant="ckpt-load"), load_checkpoint="ck")
    assert loading["checkpoint.load"] == "ck"
    assert "checkpoint.load" not in _overrides(next(s for s in V2608 if not s.parallelism["fsdp"]))


def test_llama_sets_the_reference_tokenizer_vocabulary() -> None:
    for spec in V2608:
        o = _overrides(spec)
        expected = 128256 if spec.workload == "llama3.1-mbridge" else None  # builders L40, L42
        assert o.get("tokenizer.vocab_size") == expected, spec.run_id


# --- the vocabulary FLOPs count with: one rule ------------------------------------------


def test_a_v2608_model_is_built_unpadded_and_run_spec_records_that() -> None:
    # the recipe sets the model's vocab_size from the HF config, so Megatron-Bridge's setup
    # turns padding off (setup.py@b50da4c L190, L536-569): the catalog's vocabulary as is
    for spec in V2608:
        model = CATALOG.model(spec.workload, spec.size, spec.model["source"])
        assert spec.model["vocab"] == model.shape.vocab, spec.run_id
        tp = spec.parallelism["tp"]
        built = parity_data.built_vocab(spec.parity.tokenizer, tp)
        assert spec.model["vocab"] == built, spec.run_id
        document = spec.model["source"]
        assert spec.model["vocab"] == parity_data.document_vocab(spec.workload, document, tp)


def test_the_spec_release_pads_as_its_model_does() -> None:
    # NeMo 2 and Megatron-Bridge f23d790 pad to 128 x TP: the same function, other data
    for spec in SPEC:
        tp = spec.parallelism["tp"]
        built = parity_data.built_vocab(spec.parity.tokenizer, tp)
        assert spec.model["vocab"] == built, spec.run_id
    assert parity_data.document_vocab(
        "llama3.1-mbridge", "llama31-megatron-bridge-gb300-gb200-b200-h100.md", 8
    ) == 129024  # fmt: skip
