"""The reference's launch settings reach every run: launch.sh, the Slurm job, the entry
points' configs. The rendered launch files and configs are checked against parity tables
written in this file from the reference's code (docs/parity.md), row by row of the
catalog; the real libraries build them in tests/nemo (NeMo 2 and Megatron-Bridge)."""

from __future__ import annotations

import dataclasses
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.aggregate.run_facts import model_flops
from llmbench.core.catalog import load_catalog
from llmbench.core.catalog.parity import (
    CITATION,
    REPOS,
    built_vocab,
    families,
    image_stacks,
    rack_segment,
    reference_image,
    resolve_parity,
)
from llmbench.core.config import run_specs, validate_config
from llmbench.core.flops import ModelShape, model_flops_per_sample
from llmbench.core.parity_settings import NO_PARITY
from llmbench.core.runspec import RunSpec
from llmbench.errors import LaunchError
from llmbench.launch.launchers import render_launch_script
from llmbench.launch.slurm import slurm_extra, slurm_resources
from llmbench.ranks.entrypoints import maxtext, megatron_bridge, nemo2
from llmbench.ranks.entrypoints.common import EntryOptions, decide_requirements

REF = re.compile(r"v\d+(\.\d+)+|[0-9a-f]{7,40}|core_v\d+(\.\d+)+|(llmb-nemo-)?r\d+(\.\d+)+|main")
"""Refs a citation may name: a release tag, a commit, Megatron-Core's and NeMo's branch tags."""


def _specs(workload: str, **config: object) -> list[RunSpec]:
    specs = []
    for row in load_catalog().rows(workload):
        base = {"sweeps": [row.sweep_entry()], "launcher": "srun", "container": "enroot"}
        specs += run_specs(validate_config({**base, **config}))
    return specs


ALL = {
    w: _specs(w) for w in ("llama3.1-nemo", "nemotron4-nemo", "llama3.1-mbridge", "llama2-maxtext")
}


NCCL_DEBUG_NAMES = {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"}
"""llmbench's own variables of every GPU launch (docs/transport.md), not the reference's."""


def _env(script: str) -> dict[str, str]:
    pairs = re.findall(r"^export (\w+)=(.*)$", script, flags=re.M)
    return {k: shlex.split(v)[0] if v else "" for k, v in pairs if k not in NCCL_DEBUG_NAMES}


def _srun_line(script: str) -> str:
    # the ranks' srun: the last one at the start of a line (vboost and the telemetry
    # samplers run their own sruns before it)
    start = max(script.rfind("\nexec srun"), script.rfind("\nsrun "))
    assert start >= 0, script
    return script[start + 1 :]


# --- the data ---------------------------------------------------------------------------


def _citations() -> list[tuple[str, str]]:
    """(where, citation) for every source in parity.yaml and images.yaml."""
    out = []
    for workload, documents in families().items():
        for document, entry in documents.items():
            for part in ("images", "settings", "differences"):
                for item in entry.get(part, []):
                    where = f"{workload}/{document}/{part}/{item.get('name', item.get('ref'))}"
                    out += [(where, source) for source in item["source"]]
    for ref, entry in image_stacks().items():
        out += [(f"images.yaml/{ref}", source) for source in entry["source"]]
    return out


def test_every_source_names_repo_path_ref_and_lines() -> None:
    citations = _citations()
    assert len(citations) > 300
    for where, source in citations:
        match = CITATION.fullmatch(source)
        assert match, (where, source)
        assert match["repo"] in REPOS and "." in match["path"].rsplit("/", 1)[-1], (where, source)
        assert REF.fullmatch(match["ref"]), (where, source)
        for span in match["lines"].split(","):
            first, _, last = span.removeprefix("L").partition("-")
            assert 0 < int(first) <= int(last or first), (where, source)


def test_every_setting_says_what_its_source_supports_and_every_document_has_settings() -> None:
    data = families()
    catalog = load_catalog()
    for workload in catalog.workloads():
        for row in catalog.rows(workload, include_superseded=True):
            assert row.source in data[workload], (workload, row.source)
            assert reference_image(workload, row.source, row.gpu_type), row
    for documents in data.values():
        for entry in documents.values():
            for item in entry["settings"]:
                assert len(item["supports"].split()) >= 2, item
            for diff in entry.get("differences", []):
                assert diff["reason"] and diff["reference"] and diff["source"]


def test_document_tags_are_the_ones_whose_text_the_spec_quotes() -> None:
    maxtext_doc = families()["llama2-maxtext"]["maxtext-llama2-70b-h100.txt"]
    older = families()["nemotron4-nemo"]["nemotron4-nemo2-h100.txt"]
    for entry, tag in ((maxtext_doc, "v24.11.1"), (older, "v25.04")):
        assert f"@{tag} " in entry["reference"]
        dgxc = [
            source
            for item in [*entry["settings"], *entry["images"], *entry.get("differences", [])]
            for source in item["source"]
            if source.startswith("DGXC:")
        ]
        assert dgxc and all(f"@{tag}#" in s for s in dgxc), dgxc


def test_run_spec_records_the_resolved_settings_with_sources() -> None:
    spec = ALL["llama3.1-nemo"][0]
    record = spec.to_dict()["parity"]
    assert record["document"] == "llama31-nemo2-h100.txt" and record["differences"]
    names = {(s["kind"], s["name"]): s for s in record["settings"]}
    assert names[("sbatch", "exclusive")]["value"] is True
    sources = names[("recipe", "performance_mode")]["source"]
    assert sources == ["DGXC:llama3.1/pretrain_llama31.py@v25.04.02#L73,L76,L89"]
    assert record["stack"] == {
        "image": "nvcr.io/nvidia/nemo:25.02.01",
        "reference_image": "nvcr.io/nvidia/nemo:25.02.01",
        "reference_stack": True,
        "versions": {"nemo": "2.2.1", "megatron_core": "0.11.1"},
    }
    assert record["unverified"] == []
    assert RunSpec.from_dict(spec.to_dict()) == spec  # read back by the entry point


def test_conditions_pick_per_gpu_size_and_parallelism() -> None:
    def env(workload, document, **run):
        base = {"size": "70b", "dtype": "fp8", "gpu_type": "h100", "nodes": 8, "gpus_per_node": 8}
        resolved = resolve_parity(workload, document, **{**base, **run})
        return dict(resolved.env)

    doc = "llama31-nemo2-h100.txt"
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in env("llama3.1-nemo", doc, parallelism={"tp": 1})
    assert env("llama3.1-nemo", doc, parallelism={"cp": 2})["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    assert "NCCL_P2P_NET_CHUNKSIZE" not in env("llama3.1-nemo", doc, parallelism={"pp": 1})
    newer = "nemotron4-340b-h100-gb200-gb300-b200-runai.txt"
    gb = env("nemotron4-nemo", newer, gpu_type="gb200", gpus_per_node=4, parallelism={"tp": 8})
    assert gb["CUDA_DEVICE_MAX_CONNECTIONS"] == "32" and gb["NCCL_NET_GDR_LEVEL"] == "PHB"
    # The reference's Run:ai executor sets neither the allocator nor the GDR variables.
    runai = env("nemotron4-nemo", newer, gpu_type="gb200", gpus_per_node=4, launcher="runai",
                parallelism={"tp": 8})  # fmt: skip
    assert set(gb) - set(runai) == {
        "PYTORCH_CUDA_ALLOC_CONF", "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_C2C"
    }  # fmt: skip
    tiny = {"size": "t", "dtype": "fp32", "gpu_type": "cpu", "nodes": 1, "gpus_per_node": 1}
    assert resolve_parity("tiny-llama", "x", **tiny, parallelism={}) == NO_PARITY
    assert [rack_segment(n) for n in (19, 32, 36, 128)] == [1, 16, 18, 16]


# --- allocation -------------------------------------------------------------------------


@pytest.mark.parametrize("workload", sorted(ALL))
def test_every_gpu_run_is_allocated_as_the_reference(workload: str) -> None:
    for spec in ALL[workload]:
        res = slurm_resources(spec, {}, 1)
        extra = shlex.split(res["slurm_extra"])
        assert "--exclusive" in extra, spec.run_id
        # No memory option on sbatch's command line: SBATCH_MEM_PER_NODE=0 applies.
        assert res["mem_mb"] == 0 and res["mem_mb_per_cpu"] == 0, spec.run_id
        assert res["cpus_per_task"] == -1, spec.run_id  # the plugin then asks none
        segment = [w for w in extra if w.startswith("--segment=")]
        # NeMo executors.py@1f422a1 L110-116 (past one rack only); MB executors.py@f23d790
        # L115-126 (one rack: all its nodes; past it: the largest divisor up to 18)
        if spec.gpus_per_node == 4 and workload == "nemotron4-nemo" and spec.nodes > 18:
            assert segment == [f"--segment={rack_segment(spec.nodes)}"], spec.run_id
        elif spec.gpus_per_node == 4 and workload == "llama3.1-mbridge":
            nodes = spec.nodes if spec.nodes <= 18 else rack_segment(spec.nodes)
            assert segment == [f"--segment={nodes}"], spec.run_id
        else:
            assert not segment, spec.run_id
        script = render_launch_script(spec)
        assert "# Allocation as the reference: sbatch --exclusive, --mem=0" in script


def test_gb300_128_gpu_megatron_bridge_run_asks_segment_16() -> None:
    spec = next(s for s in ALL["llama3.1-mbridge"] if s.run_id.endswith("_gb300x128_perf"))
    assert spec.nodes == 32
    assert "--segment=16" in shlex.split(slurm_resources(spec, {}, 1)["slurm_extra"])
    assert "--segment=16." in render_launch_script(spec)


def test_site_segment_and_exclusive_extras_still_apply() -> None:
    spec = next(s for s in ALL["nemotron4-nemo"] if s.gpus_per_node == 4 and s.nodes > 18)
    extra = slurm_resources(spec, {"segment": 8, "reservation": "r1"}, 1)["slurm_extra"]
    assert shlex.split(extra) == ["--reservation=r1", "--segment=8", "--exclusive"]
    assert slurm_extra({"exclusive": False}) == ""


def test_the_embedded_workload_keeps_its_small_allocation() -> None:
    config = validate_config({"sweeps": [{"workload": "tiny-llama", "sizes": ["tiny"],
                              "dtypes": ["fp32"], "gpu_type": "cpu", "scales": [2]}]})  # fmt: skip
    (spec,) = run_specs(config)
    res = slurm_resources(spec, {}, 2)
    assert spec.parity == NO_PARITY and res["cpus_per_task"] == 2 and res["mem_mb_per_cpu"] == 1000
    assert "--exclusive" not in res["slurm_extra"]


# --- NeMo 2: environment and plan (the recipe itself: tests/nemo/test_nemo_parity.py) -----

NEMO_ENV = {
    "TORCH_NCCL_AVOID_RECORD_STREAMS": "1", "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "False", "NCCL_NVLS_ENABLE": "0", "NVTE_FLASH_ATTN": "1",
    "NVTE_FUSED_ATTN": "1", "NEMO_LOG_MEMORY_USAGE": "1",
    "NVTE_FWD_LAYERNORM_SM_MARGIN": "16", "NVTE_BWD_LAYERNORM_SM_MARGIN": "16",
}  # fmt: skip
"""llama31_utils.py@v25.04.02 L61-70, utils.py@d2b2155 L62-71, executors.py@1f422a1 L61-69
and PerfEnvPlugin's margin: every NeMo 2 run of every document."""


def _nemo_expected_env(spec: RunSpec, launcher: str = "srun") -> dict[str, str]:
    p = spec.parallelism
    newer = spec.model["source"].startswith("nemotron4-340b")
    env = dict(NEMO_ENV)
    if p["tp"] > 1 or p["cp"] > 1:
        # gpu_sm100_or_newer: b200/gb200 (helpers.py@1f422a1 L551); gb300 kept at 32
        # (its pin is not public: unverified in the data)
        sm100 = spec.gpu_type in ("b200", "gb200", "gb300")
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = "32" if newer and sm100 else "1"
    if p["pp"] > 1:  # PerfEnvPlugin: every document, PP > 1
        env["NCCL_P2P_NET_CHUNKSIZE"] = "2097152"
    if not newer:
        return env
    env["TORCH_NCCL_HIGH_PRIORITY"] = "1"
    if launcher == "runai":  # executors.py@1f422a1 L168-176: the Run:ai executor's env only
        return env
    if spec.gpu_type != "b200":  # executors.py@1f422a1 L82-85
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    if spec.gpu_type == "gb200":
        env |= {"NCCL_NET_GDR_LEVEL": "PHB", "NCCL_NET_GDR_C2C": "1"}
    return env


@pytest.mark.parametrize("workload", ["llama3.1-nemo", "nemotron4-nemo"])
def test_nemo2_launch_files_carry_the_reference_environment(workload: str) -> None:
    for spec in ALL[workload]:
        script = render_launch_script(spec)
        env = _env(script)
        env.pop("MASTER_ADDR"), env.pop("MASTER_PORT")
        assert env == _nemo_expected_env(spec), spec.run_id
        srun = _srun_line(script)
        assert ("--container-env=HF_TOKEN," + ",".join(env)) in srun, spec.run_id
        newer = spec.model["source"].startswith("nemotron4-340b")
        assert ("vboost" in script) == (not newer), spec.run_id
        assert ("numactl" in srun) == newer and ("--container-writable" in srun) == newer
        if newer:  # executors.py@1f422a1 L118: 2 on gb200, else 4; gb300 kept at 2
            per = 2 if spec.gpu_type in ("gb200", "gb300") else 4
            assert f"--cpunodebind=$((SLURM_LOCALID / {per}))" in srun, spec.run_id


def test_nemo2_plan_applies_the_reference_construction() -> None:
    spec = next(s for s in ALL["llama3.1-nemo"] if s.size == "70b" and s.dtype == "fp8")
    plan = nemo2.plan(EntryOptions(spec))
    assert plan.recipe == "llama3_70b" and plan.recipe_kwargs["performance_mode"] is True
    assert plan.comm_overlap == {
        "tp_comm_overlap_cfg": "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192",
        "overlap_param_gather_with_optimizer_step": True,  # dp 2, pp 8, vp 5
    }
    o = plan.overrides
    assert o["trainer.plugins.grad_reduce_in_fp32"] is False and plan.fp8_recipe == "delayed"
    assert o["trainer.log_every_n_steps"] == 1 and o["trainer.logger"] is False
    assert o["log.tensorboard"] is None and o["log.ckpt"] is None
    assert o["data.num_train_samples"] == spec.steps * spec.global_batch_size  # MBS 1
    saving = nemo2.plan(EntryOptions(spec, save_checkpoint="ck"))
    assert saving.comm_overlap["overlap_param_gather_with_optimizer_step"] is False
    assert "log.ckpt" not in saving.overrides  # the checkpoint callback saves
    newer = next(s for s in ALL["nemotron4-nemo"] if s.gpu_type == "gb200" and s.dtype == "fp8")
    plan = nemo2.plan(EntryOptions(newer))
    assert plan.fp8_recipe == "current_scaling" and plan.tokenizer_vocab_size == 256000
    assert plan.overrides["trainer.plugins.first_last_layers_bf16"] is False
    # 25.07.01 carries Megatron-Core 0.13: the reference's own switch
    assert plan.overrides["model.config.enable_cuda_graph"] is True
    assert "model.config.cuda_graph_impl" not in plan.overrides
    tuned = "userbuffers_fp8_b200_h18432_tp8_mbs1_seqlen4096"  # 340b.py@1f422a1 L114-122
    assert plan.comm_overlap["tp_comm_overlap_cfg"] == tuned


def test_nemotron_older_document_sizes_the_mock_data_with_mbs() -> None:
    spec = next(s for s in ALL["nemotron4-nemo"] if s.size == "15b")
    assert spec.micro_batch_size == 2
    samples = nemo2.plan(EntryOptions(spec)).overrides["data.num_train_samples"]
    assert samples == spec.steps * spec.global_batch_size * 2  # pretrain_nemotron4_15b.py L75
    newer = next(s for s in ALL["nemotron4-nemo"] if s.model["source"].startswith("nemotron4-340b"))
    samples = nemo2.plan(EntryOptions(newer)).overrides["data.num_train_samples"]
    assert samples == newer.steps * newer.global_batch_size  # helpers.py@1f422a1 L395-396


@pytest.mark.parametrize("gpu_type", ["b200", "gb200", "gb300", "h100"])
def test_nemotron_340b_userbuffers_config_per_gpu(gpu_type: str) -> None:
    for spec in ALL["nemotron4-nemo"]:
        if spec.size != "340b" or spec.gpu_type != gpu_type:
            continue
        cfg = nemo2.plan(EntryOptions(spec)).comm_overlap.get("tp_comm_overlap_cfg")
        tuned = f"userbuffers_{spec.dtype}_b200_h18432_tp8_mbs1_seqlen4096"
        assert cfg == (tuned if gpu_type in ("b200", "gb200") else None), spec.run_id


# --- Megatron-Bridge ----------------------------------------------------------------------

MB_COMMON_ENV = {
    "TORCH_NCCL_AVOID_RECORD_STREAMS": "1", "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "False", "NVTE_FLASH_ATTN": "1", "NVTE_FUSED_ATTN": "1",
}  # fmt: skip
"""executors.py L38-47 @f23d790, every run."""


def _mb_expected(spec: RunSpec) -> tuple[dict[str, str], dict[str, object]]:
    """The parity table: (environment, config overrides) per row."""
    gb = spec.gpu_type in ("gb200", "gb300")
    h100 = spec.gpu_type == "h100"
    fsdp = bool(spec.parallelism["fsdp"])
    env = dict(MB_COMMON_ENV)
    margin = "20" if h100 else "16"  # setup_experiment.py@f23d790 L78, L85
    env |= {"NVTE_FWD_LAYERNORM_SM_MARGIN": margin, "NVTE_BWD_LAYERNORM_SM_MARGIN": margin}
    env["NCCL_NVLS_ENABLE"] = "1" if (h100 and spec.size == "8b") else "0"
    if h100 and spec.size == "8b":
        env["NCCL_CTA_POLICY"] = "1"
    if not (h100 and spec.size == "405b"):
        env |= {"NVTE_NORM_FWD_USE_CUDNN": "1", "NVTE_NORM_BWD_USE_CUDNN": "1"}
    if gb:
        env |= {"NCCL_NET_GDR_LEVEL": "PHB", "NCCL_NET_GDR_C2C": "1"}
    if gb and spec.size == "405b":
        env |= {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                "CUDA_DEVICE_MAX_CONNECTIONS": "32"}  # fmt: skip
    if h100 and spec.size in ("70b", "405b"):
        env |= {"TORCH_NCCL_HIGH_PRIORITY": "1", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                "NCCL_P2P_NET_CHUNKSIZE": "2097152"}  # fmt: skip
    cg = bool(spec.parallelism["cuda_graphs"]) and not (h100 and spec.size == "8b")
    config: dict[str, object] = {
        "model.cross_entropy_fusion_impl": "te",
        "model.use_transformer_engine_op_fuser": False,
        "model.apply_rope_fusion": True,
        "ddp.check_for_nan_in_grad": False,
        "ddp.check_for_large_grads": False,
        "rerun_state_machine.check_for_nan_in_loss": False,
        "logger.log_interval": 1,
        "model.sequence_parallel": spec.parallelism["tp"] > 1,
        "model.enable_cuda_graph": cg,
        "model.use_te_rng_tracker": cg,
        "rng.te_rng_tracker": cg,
        "model.gradient_accumulation_fusion": not (fsdp and spec.size in ("8b", "70b")),
        "model.cpu_offloading_weights": False,
        "checkpoint.save": None,  # configs/*_llm_pretrain.yaml: save: null
        "logger.tensorboard_dir": "nemo_experiments/default/tb_logs",  # the recipe's own
    }
    if h100 and spec.size == "70b":  # the H100 70B preset names no recompute (yaml L56-77)
        config |= {"model.recompute_granularity": None, "model.recompute_method": None,
                   "model.recompute_num_layers": None}  # fmt: skip
    elif spec.parallelism["recompute_layers"]:
        config |= {"model.recompute_granularity": "full", "model.recompute_method": "block",
                   "model.recompute_num_layers": spec.parallelism["recompute_layers"]}  # fmt: skip
    if fsdp:
        config |= {
            "ddp.use_megatron_fsdp": True,
            "ddp.data_parallel_sharding_strategy": "optim_grads_params",
            "ddp.keep_fp8_transpose_cache": False,
            "ddp.average_in_collective": False,
            "model.init_model_with_meta_device": True,
            "comm_overlap.defer_embedding_wgrad_compute": False,
            "optimizer.use_precision_aware_optimizer": False,
        }
        if spec.size in ("70b", "405b"):
            config["ddp.fsdp_double_buffer"] = True
        if h100 and spec.size == "8b":
            config["ddp.nccl_ub"] = True
    return env, config


def test_megatron_bridge_rows_match_the_parity_table() -> None:
    modules = {"8b": "llama3_8b", "70b": "llama3_70b", "405b": "llama31_405b"}
    for spec in ALL["llama3.1-mbridge"]:
        script = render_launch_script(spec)
        env = _env(script)
        for k in ("MASTER_ADDR", "MASTER_PORT"):
            env.pop(k)
        expected_env, expected_config = _mb_expected(spec)
        h100 = spec.gpu_type == "h100"
        assert env == expected_env, spec.run_id
        divisor = 2 if spec.gpu_type in ("gb200", "gb300") else 4  # executors.py L128
        assert f"$((SLURM_LOCALID / {divisor}))" in _srun_line(script)
        options = EntryOptions(spec)
        o = megatron_bridge.overrides(options)
        for key, value in expected_config.items():
            assert o.get(key, "<absent>") == value, (spec.run_id, key)
        assert megatron_bridge.recipe_call(options) == (modules[spec.size], {"mock": True})
        ub = None  # COMM_OVERLAP_CONFIG_MAP: per size, H100 or the Blackwell shape
        if spec.size != "8b":
            gpu = "h100" if h100 else "b200"
            shapes = {
                "70b": {"h100": "h8192_tp4", "b200": "h8192_tp2"},
                "405b": {"h100": "h16384_tp8_cp2", "b200": "h16384_tp4_cp2"},
            }
            shape = shapes[spec.size][gpu]
            ub = f"userbuffers_fp8_{gpu}_{shape}_mbs1_seqlen8192"
        recipe = dict(spec.parity.recipe)
        assert recipe.get("comm_overlap.tp_comm_overlap_cfg") == ub, spec.run_id
        name, fields = megatron_bridge.precision(options)
        assert name == "bf16_with_fp8_current_scaling_mixed", spec.run_id
        assert fields == {"first_last_layers_bf16": False, "grad_reduce_in_fp32": False}
        # NullTokenizer(128256) padded to 128 x TP (gpt_provider.py@f23d790 L205-209): the
        # one rule (test_parity_launch_data pins its values)
        tp = spec.parallelism["tp"]
        assert spec.model["vocab"] == built_vocab(spec.parity.tokenizer, tp), spec.run_id


def test_h100_70b_megatron_bridge_run_recomputes_nothing() -> None:
    for spec in ALL["llama3.1-mbridge"]:
        if spec.size != "70b" or spec.gpu_type not in ("h100", "b200"):
            continue
        o = megatron_bridge.overrides(EntryOptions(spec))
        expected = None if spec.gpu_type == "h100" else "full"  # b200 presets L101, L109
        assert o["model.recompute_granularity"] == expected, spec.run_id
        assert o["model.recompute_num_layers"] == (None if expected is None else 5)
        # what run_spec and `llmbench recipes` show is what runs (the H100 table prints 5)
        assert spec.parallelism["recompute_layers"] == (0 if expected is None else 5)
        row = load_catalog().row(spec.workload, spec.size, spec.dtype, spec.gpu_type, spec.gpus)
        assert row.recompute_layers == spec.parallelism["recompute_layers"], spec.run_id


def test_h100_8b_megatron_bridge_row_shows_the_cuda_graphs_it_runs() -> None:
    for spec in ALL["llama3.1-mbridge"]:
        if spec.size != "8b":
            continue
        o = megatron_bridge.overrides(EntryOptions(spec))
        runs_graphs = spec.gpu_type != "h100"  # the H100 preset: cuda_graphs false (L52-59)
        assert o["model.enable_cuda_graph"] is runs_graphs, spec.run_id
        assert spec.parallelism["cuda_graphs"] is runs_graphs, spec.run_id  # the table: on


def test_megatron_bridge_perf_runs_save_no_checkpoint_and_keep_tensorboard() -> None:
    spec = next(s for s in ALL["llama3.1-mbridge"] if s.size == "405b")
    o = megatron_bridge.overrides(EntryOptions(spec))
    assert o["checkpoint.save"] is None
    assert o["logger.tensorboard_dir"] == "nemo_experiments/default/tb_logs"
    saving = megatron_bridge.overrides(EntryOptions(spec, save_checkpoint="ck"))
    assert saving["checkpoint.save"] == "ck"  # the checkpoint variant keeps its folder


# --- MaxText ------------------------------------------------------------------------------


def test_maxtext_rows_match_the_parity_table() -> None:
    for spec in ALL["llama2-maxtext"]:
        script = render_launch_script(spec)
        env = _env(script)
        assert env["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.94" and env["NCCL_IB_SL"] == "1"
        assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1" and env["NVTE_FUSED_ATTN"] == "1"
        flags = dict(f.split("=", 1) for f in env["XLA_FLAGS"].split())
        many = spec.nodes >= 64
        ar, ag, rs = (8, 16, 2048 if many else 1024) if spec.dtype == "fp8" else (
            4, 4, 512 if many else 256)  # fmt: skip
        gib8 = 8 * 1073741824
        assert flags["--xla_gpu_all_reduce_combine_threshold_bytes"] == str(gib8 // ar)
        assert flags["--xla_gpu_all_gather_combine_threshold_bytes"] == str(gib8 // ag)
        assert flags["--xla_gpu_reduce_scatter_combine_threshold_bytes"] == str(gib8 // rs)
        assert flags["--xla_gpu_enable_latency_hiding_scheduler"] == "true"
        assert flags["--xla_disable_hlo_passes"] == "rematerialization"
        assert "--container-writable" in _srun_line(script)
        argv = maxtext.argv_for(EntryOptions(spec))
        assert argv[:2] == [
            "/opt/maxtext/MaxText/train.py",
            "/opt/maxtext/MaxText/configs/base.yml",
        ]
        kv = dict(a.split("=", 1) for a in argv[2:])
        assert kv["hardware"] == "gpu_multiprocess" and kv["attention"] == "cudnn_flash_te"
        assert (kv["scan_layers"], kv["use_iota_embed"], kv["logits_dot_in_fp32"]) == (
            "true", "true", "false")  # fmt: skip
        assert kv["remat_policy"] == "custom"
        offloaded = {k for k, v in kv.items() if v == "device"}
        expected = {"query_proj", "key_proj", "value_proj", "qkv_proj", "out_proj"}
        assert offloaded == expected | ({"mlpwo"} if spec.dtype == "bf16" else set())
        dcn_fsdp = 16 if spec.nodes >= 64 else spec.nodes
        assert (kv["ici_fsdp_parallelism"], kv["dcn_fsdp_parallelism"]) == ("8", str(dcn_fsdp))
        assert kv["dcn_data_parallelism"] == str(spec.nodes // dcn_fsdp)
        assert spec.model["vocab"] == 32000


# --- the vocabulary FLOPs use -------------------------------------------------------------


def test_built_vocabulary_pads_as_nemo_does_and_flops_use_it() -> None:
    llama = families()["llama3.1-nemo"]["llama31-nemo2-h100.txt"]
    tok = {s["name"]: s["value"] for s in llama["settings"] if s["kind"] == "tokenizer"}
    assert [built_vocab(tok, tp) for tp in (1, 2, 4, 8)] == [128256, 128256, 128512, 129024]
    nemotron = families()["nemotron4-nemo"]["nemotron4-nemo2-h100.txt"]
    tok = {s["name"]: s["value"] for s in nemotron["settings"] if s["kind"] == "tokenizer"}
    assert [built_vocab(tok, tp) for tp in (1, 2, 8)] == [256128, 256256, 257024]
    for spec in ALL["llama3.1-nemo"] + ALL["nemotron4-nemo"]:
        assert spec.model["vocab"] == built_vocab(spec.parity.tokenizer, spec.parallelism["tp"])
        shape = ModelShape(**{k: spec.model[k] for k in ModelShape.__dataclass_fields__})
        catalog_shape = dataclasses.replace(shape, vocab=load_catalog().model(
            spec.workload, spec.size, spec.model["source"]).shape.vocab)  # fmt: skip
        built = model_flops_per_sample(spec.model["flops_formula"], shape)
        assert model_flops(spec.model) == built, spec.run_id
        extra = 6 * (shape.vocab - catalog_shape.vocab) * shape.hidden * shape.seq_len
        assert built - model_flops_per_sample(spec.model["flops_formula"], catalog_shape) == (
            pytest.approx(extra, rel=1e-9))  # fmt: skip


def test_docs_are_generated_from_the_data_per_family_and_gpu_type() -> None:
    from llmbench.core.catalog.parity_doc import MARKER, parity_markdown
    from tests.helpers import REPO

    text = (REPO / "docs" / "parity.md").read_text()
    generated = text[text.index(MARKER) + len(MARKER) :].strip("\n")
    assert generated == parity_markdown().strip("\n"), "regenerate: python -m benchmarks.parity_doc"
    for documents in families().values():
        for entry in documents.values():
            for item in entry["settings"]:
                assert f"`{item['name']}`" in generated, item
                assert all(f"`{s}`" in generated for s in item["source"]), item
    headings = set(re.findall(r"^#### (\S+) on (\w+)$", generated, flags=re.M))
    expected = {(row.workload, row.gpu_type.upper()) for row in load_catalog().rows(
        include_superseded=True, release=None) if row.workload in families()}  # fmt: skip
    assert headings == expected


def test_the_doc_writer_writes_the_committed_page_and_refuses_one_without_marker(
    tmp_path: Path,
) -> None:
    from llmbench.core.catalog.parity_doc import MARKER
    from tests.helpers import REPO

    committed = (REPO / "docs" / "parity.md").read_text()
    stale = tmp_path / "parity.md"
    stale.write_text(committed[: committed.index(MARKER) + len(MARKER)] + "\n\nold table\n")
    write = [sys.executable, "-m", "benchmarks.parity_doc"]
    done = subprocess.run([*write, str(stale)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert stale.read_text() == committed
    unmarked = tmp_path / "other.md"
    unmarked.write_text("# a page\n")
    done = subprocess.run([*write, str(unmarked)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 1 and unmarked.read_text() == "# a page\n"
    assert done.stderr.startswith(f"llmbench: error: {unmarked}: no line ")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_maxtext_runs_the_reference_pgle_pass_first() -> None:
    spec = next(s for s in ALL["llama2-maxtext"] if s.dtype == "fp8")
    flags = _env(render_launch_script(spec))["XLA_FLAGS"]
    options = EntryOptions(spec)
    zero, other = maxtext.pgle_pass(options, 0, flags), maxtext.pgle_pass(options, 5, flags)
    assert zero is not None and other is not None
    nsys, profile = zero.profile_argv[: zero.profile_argv.index("python3")], zero.profile_argv
    assert nsys[:2] == ["nsys", "profile"] and "--capture-range=cudaProfilerApi" in nsys
    kv = dict(a.split("=", 1) for a in profile[profile.index("python3") + 3 :])
    assert (kv["steps"], kv["profiler"], kv["skip_first_n_steps_for_profiler"]) == (
        "15", "nsys", "9")  # fmt: skip
    assert kv["profiler_steps"] == "3" and kv["run_name"].endswith("-prof")
    assert kv["remat_policy"] == "custom" and kv["hardware"] == "gpu_multiprocess"
    # Profile pass: scheduler and async collectives off; measured run: on, with the profile.
    assert "--xla_gpu_enable_latency_hiding_scheduler=false" in zero.profile_xla_flags
    assert "--xla_gpu_disable_async_collectives=allreduce,allgather,reducescatter" in (
        zero.profile_xla_flags)  # fmt: skip
    pbtxt = f"pgle/{spec.run_id}.pbtxt"
    assert zero.perf_xla_flags == f"{flags} --xla_gpu_pgle_profile_file_or_directory_path={pbtxt}"
    assert zero.converter_argv[-1] == pbtxt and "pgle/profile.nsys-rep" in zero.converter_argv
    assert zero.report == "pgle/profile" and not other.report.startswith("pgle/")
    no_pgle = dataclasses.replace(spec, parity=NO_PARITY)
    assert maxtext.pgle_pass(EntryOptions(no_pgle), 0, flags) is None
    assert maxtext.pgle_pass(EntryOptions(spec, profile_steps=(45, 50)), 0, flags) is None


def _drop(spec: RunSpec, keep) -> RunSpec:
    kept = tuple(s for s in spec.parity.settings if keep(s))
    return dataclasses.replace(spec, parity=dataclasses.replace(spec.parity, settings=kept))


def _launch_matches(spec: RunSpec) -> bool:
    """The NeMo 2 launch checks above, as one verdict (for the mutations)."""
    script = render_launch_script(spec)
    env = {k: v for k, v in _env(script).items() if not k.startswith(("OMP_", "MASTER_"))}
    res = slurm_resources(spec, {}, 1)
    newer = spec.model["source"].startswith("nemotron4-340b")
    rack = newer and spec.gpus_per_node == 4 and spec.nodes > 18
    srun = _srun_line(script)
    return (
        env == _nemo_expected_env(spec)
        and "--exclusive" in res["slurm_extra"]
        and res["mem_mb_per_cpu"] == 0
        and res["cpus_per_task"] == -1
        and ("vboost" in script) == (not newer)
        and ("numactl" in srun) == newer
        and ("--container-writable" in srun) == newer
        and ("--segment" in res["slurm_extra"]) == rack
    )


@pytest.mark.parametrize("kind", ["env", "sbatch", "srun", "prefix", "node"])
def test_dropping_a_launch_setting_breaks_nemo2_parity(kind: str) -> None:
    specs = ALL["llama3.1-nemo"] + ALL["nemotron4-nemo"]
    assert all(_launch_matches(s) for s in specs)
    names = {s.name for spec in specs for s in spec.parity.settings if s.kind == kind}
    for name in names:  # each setting of the class, dropped alone, is noticed on some row
        broken = [_drop(s, lambda x, n=name: x.name != n) for s in specs]
        assert not all(_launch_matches(s) for s in broken), (kind, name)


# --- the software stack: the reference's images, and what exists only in newer ones -------

REFERENCE_IMAGES = {
    ("llama3.1-nemo", "h100"): "nvcr.io/nvidia/nemo:25.02.01",  # llama3.1/setup.sh@v25.04.02 L34
    ("nemotron4-nemo-older", "h100"): "nvcr.io/nvidia/nemo:25.02.01",  # nemotron/setup.sh@v25.04
    ("nemotron4-nemo", "h100"): "nvcr.io/nvidia/nemo:25.09.00",  # nemotron4-340b/launch.sh L43-49
    ("nemotron4-nemo", "gb300"): "nvcr.io/nvidia/nemo:25.09.00",
    ("nemotron4-nemo", "gb200"): "nvcr.io/nvidia/nemo:25.07.01",
    ("nemotron4-nemo", "b200"): "nvcr.io/nvidia/nemo:25.07.01",
    ("llama3.1-mbridge", "any"): "nvcr.io/nvidia/nemo:25.09.00",  # metadata.yaml@v25.10 L8-10
    ("llama2-maxtext", "h100"): "ghcr.io/nvidia/jax:maxtext-2024-12-09",  # setup.sh@v24.11.1
}


def _reference_image_of(spec: RunSpec) -> str:
    workload = spec.workload
    if workload == "nemotron4-nemo" and spec.model["source"] == "nemotron4-nemo2-h100.txt":
        workload = "nemotron4-nemo-older"
    key = (workload, "any") if workload == "llama3.1-mbridge" else (workload, spec.gpu_type)
    return REFERENCE_IMAGES[key]


@pytest.mark.parametrize("workload", sorted(ALL))
def test_every_catalog_run_defaults_to_the_reference_image(workload: str) -> None:
    for spec in ALL[workload]:
        assert spec.image == _reference_image_of(spec), spec.run_id
        stack = spec.parity.stack
        assert stack.image == stack.reference_image == spec.image, spec.run_id
        assert stack.reference_stack is True and stack.versions, spec.run_id


def test_a_site_image_is_recorded_as_not_the_reference_stack() -> None:
    config = {"images": {"llama3.1-nemo": "nvcr.io/nvidia/nemo:25.11"}}
    spec = _specs("llama3.1-nemo", **config)[0]
    assert spec.image == "nvcr.io/nvidia/nemo:25.11"
    assert spec.parity.stack.reference_stack is False
    assert spec.parity.stack.reference_image == "nvcr.io/nvidia/nemo:25.02.01"
    # no container: the ranks run in a Python environment, not the reference's image
    row = load_catalog().rows("llama3.1-nemo")[0]
    (venv,) = run_specs(validate_config({"sweeps": [row.sweep_entry()], "launcher": "srun"}))
    assert venv.parity.stack.reference_stack is False and venv.parity.stack.image == ""


def _blackwell_340b(**config: object) -> RunSpec:
    return next(
        s for s in _specs("nemotron4-nemo", **config)
        if s.gpu_type == "gb200" and s.model["source"].startswith("nemotron4-340b")
    )  # fmt: skip


def _cuda_graph_settings(spec: RunSpec) -> dict[str, object]:
    names = ("model.config.enable_cuda_graph", "model.config.cuda_graph_impl")
    return {s.name: s.requires for s in spec.parity.settings if s.name in names}


def test_cuda_graph_impl_applies_only_where_the_image_has_it() -> None:
    # The reference's images carry Megatron-Core 0.13/0.14 (images.yaml): its own switch.
    assert image_stacks()["nvcr.io/nvidia/nemo:25.07.01"]["versions"]["megatron_core"] < "0.15"
    assert _cuda_graph_settings(_blackwell_340b()) == {"model.config.enable_cuda_graph": None}
    # An image of unknown versions: both wait for the container's Megatron-Core.
    unknown = _blackwell_340b(images={"nemotron4-nemo": "site/nemo:26.01"})
    pending = _cuda_graph_settings(unknown)
    assert pending == {
        "model.config.enable_cuda_graph": {"megatron_core": "<0.15"},
        "model.config.cuda_graph_impl": {"megatron_core": ">=0.15"},
    }
    assert not {"model.config.enable_cuda_graph", "model.config.cuda_graph_impl"} & set(
        nemo2.plan(EntryOptions(unknown)).overrides)  # fmt: skip
    for version, switch, value in (("0.15.3", "cuda_graph_impl", "local"),
                                   ("0.14.0", "enable_cuda_graph", True)):  # fmt: skip
        decided = decide_requirements(unknown, {"megatron_core": version})
        o = nemo2.plan(EntryOptions(decided)).overrides
        assert o[f"model.config.{switch}"] == value, version
        assert len(_cuda_graph_settings(decided)) == 1, version
    with pytest.raises(LaunchError, match="megatron_core: version unknown"):
        decide_requirements(unknown, {})


# --- GB300 on the 340B document: values from a pin that is not public ---------------------


def test_gb300_340b_values_of_the_unreadable_pin_are_marked_unverified() -> None:
    spec = next(s for s in ALL["nemotron4-nemo"] if s.gpu_type == "gb300")
    unverified = {s.name: s.unverified for s in spec.parity.settings if s.unverified is not None}
    assert spec.parity.unverified == tuple(unverified)
    assert set(unverified) == {"numactl", "CUDA_DEVICE_MAX_CONNECTIONS", "PYTORCH_CUDA_ALLOC_CONF"}
    assert all("f260da5" in why and "1f422a1" in why for why in unverified.values())
    script = render_launch_script(spec)
    env = _env(script)  # kept as before, shown as unverified
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "32"
    assert "# Unverified (the reference's pin is not public): numactl, " in script
    assert "$((SLURM_LOCALID / 2))" in _srun_line(render_launch_script(spec))
    other = next(s for s in ALL["nemotron4-nemo"] if s.gpu_type == "gb200")
    assert other.parity.unverified == ()
    from tests.helpers import REPO

    docs = (REPO / "docs" / "parity.md").read_text()
    section = docs[docs.index("#### nemotron4-nemo on GB300") :]
    assert section[: section.index("\n#### ")].count("**unverified**") == 3


# --- the ranks' environment: every launcher, no OMP_NUM_THREADS of llmbench's own -----------


@pytest.mark.parametrize("workload", sorted(ALL))
def test_reference_runs_set_no_omp_threads_and_the_embedded_one_does(workload: str) -> None:
    for spec in ALL[workload]:
        assert "OMP_NUM_THREADS" not in render_launch_script(spec), spec.run_id
    config = validate_config({"sweeps": [{"workload": "tiny-llama", "sizes": ["tiny"],
                              "dtypes": ["fp32"], "gpu_type": "cpu", "scales": [2]}],
                              "threads_per_rank": 2})  # fmt: skip
    (tiny,) = run_specs(config)
    assert "export OMP_NUM_THREADS=2" in render_launch_script(tiny)
