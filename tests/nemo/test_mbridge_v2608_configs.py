"""Every v26.08 catalog row's config, built by the real Megatron-Bridge 0.5 on a CPU.

The entry point's own code (``megatron_bridge.main --check-only``) builds each of the 143
rows with the release's recipe function (``llama3_70b_pretrain_config``,
``qwen3_235b_a22b_pretrain_config``, ``deepseek_v3_pretrain_config`` ...) and llmbench's
overrides in Megatron-Bridge 0.5.1 and Megatron-Core 0.18.0 (envs/venv-mbridge-0.5.txt,
docs/parity.md says why 0.5.1), reads every override and the model's shape back and runs the
library's own checks (``runtime_config_update``: what ``pretrain`` runs first) at the row's
world size, on its GPU type. What the CPU's Python 3.11 lacks is stood in for, as little as
possible (tests/nemo/mbridge_stand_ins.py). One process builds them all.
Runs in CI (``CI=true``) or with ``LLMBENCH_MBRIDGE=1``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from llmbench.core.catalog import load_catalog
from llmbench.core.config import run_specs, validate_config
from llmbench.core.parity_settings import Setting
from llmbench.core.runspec import RunSpec
from tests.nemo.test_mbridge_configs import UNKNOWN, _expected

pytestmark = pytest.mark.mbridge

RELEASE = "v26.08"
CHECKER = Path(__file__).with_name("check_mbridge.py")
FSDP_REFUSAL = "Megatron-FSDP requires the fsdp_dtensor checkpointing format"
SHAPE = {  # run_spec model field -> the built model's field
    "layers": "num_layers", "hidden": "hidden_size", "ffn_hidden": "ffn_hidden_size",
    "heads": "num_attention_heads", "query_groups": "num_query_groups",
    "head_dim": "kv_channels", "experts": "num_moe_experts", "topk": "moe_router_topk",
    "moe_ffn_hidden": "moe_ffn_hidden_size",
    "shared_ffn_hidden": "moe_shared_expert_intermediate_size", "q_lora_rank": "q_lora_rank",
    "kv_lora_rank": "kv_lora_rank", "qk_head_dim": "qk_head_dim",
    "qk_rope_dim": "qk_pos_emb_head_dim", "v_head_dim": "v_head_dim",
    "mtp_layers": "mtp_num_layers",
}  # fmt: skip


def release_specs() -> list[RunSpec]:
    """One perf run per row of the release, in the reference's image."""
    specs = []
    for row in load_catalog().rows(release=RELEASE):
        config = {"sweeps": [row.sweep_entry()], "launcher": "srun", "container": "enroot"}
        specs += run_specs(validate_config(config))
    return specs


def _case(name: str, spec: RunSpec, folder: Path, *variant_args: str) -> list[str]:
    spec_file = folder / f"{name}.json"
    spec_file.write_text(spec.to_json())
    return ["--spec", str(spec_file), *variant_args, "--check-only", str(folder / f"{name}.out")]


def _with_setting(spec: RunSpec, name: str, value: object) -> RunSpec:
    """``spec`` with one more recipe setting (it wins over an earlier one of that name)."""
    setting = Setting(kind="recipe", name=name, value=value)
    parity = dataclasses.replace(spec.parity, settings=(*spec.parity.settings, setting))
    return dataclasses.replace(spec, parity=parity)


def _controls(specs: list[RunSpec], folder: Path) -> dict[str, list[str]]:
    """Cases that must come out otherwise: an override the library lacks, a Megatron-FSDP
    row asked to load a checkpoint in the recipe's format (the library refuses it), the
    checkpoint-save variant of a row without FSDP and of one with (its own format)."""
    fsdp = next(s for s in specs if s.parallelism.get("fsdp"))
    plain = next(s for s in specs if not s.parallelism.get("fsdp"))
    unknown = _with_setting(plain, UNKNOWN, 1)
    refused = _with_setting(fsdp, "checkpoint.load", str(folder / "ck"))
    save = dataclasses.replace(plain, variant="ckpt-save")
    fsdp_save = dataclasses.replace(fsdp, variant="ckpt-save")
    return {
        "control-unknown-field": _case("control-unknown-field", unknown, folder),
        "control-fsdp-load": _case("control-fsdp-load", refused, folder),
        "control-save": _case("control-save", save, folder, "--save-checkpoint", str(folder)),
        "control-fsdp-save": _case(
            "control-fsdp-save", fsdp_save, folder, "--save-checkpoint", str(folder)
        ),
    }


@pytest.fixture(scope="module")
def checked(mbridge_05_env, tmp_path_factory):
    python, env = mbridge_05_env
    folder = tmp_path_factory.mktemp("mbridge-05")
    specs = release_specs()
    images = {json.dumps(dict(s.parity.stack.versions), sort_keys=True) for s in specs}
    assert len(images) == 1, images  # one image: one Transformer Engine version to stand in
    te_version = specs[0].parity.stack.versions["transformer_engine"]
    cases = {s.run_id: _case(s.run_id, s, folder) for s in specs}
    cases.update(_controls(specs, folder))
    cases_file, results_file = folder / "cases.json", folder / "results.jsonl"
    cases_file.write_text(json.dumps(list(cases.values())))
    start = time.monotonic()
    proc = subprocess.run(
        [str(python), str(CHECKER), str(cases_file), str(results_file)],
        env={**env, "LLMBENCH_TE_STAND_IN": te_version},
        cwd=folder, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    print(f"{len(cases)} configs built and checked in one process in "
          f"{time.monotonic() - start:.1f} s")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = {Path(r["argv"][1]).stem: r for r in map(json.loads, results_file.open())}
    built = {
        name: json.loads((folder / f"{name}.out").read_text())
        for name, r in results.items()
        if r["ok"]
    }
    overlay = env["PYTHONPATH"].split(os.pathsep)[0]  # the Megatron-Bridge folder
    for result in results.values():
        assert result["megatron_bridge_path"].startswith(overlay), result
    return specs, results, built


def test_every_release_row_builds_in_megatron_bridge_05_and_validates(checked) -> None:
    specs, results, built = checked
    assert len(specs) == len(load_catalog().rows(release=RELEASE)) == 143
    for spec in specs:
        result = results[spec.run_id]
        assert result["ok"], (spec.run_id, result["error"])
        assert (result["megatron_bridge"], result["megatron_core"]) == ("0.5.1", "0.18.0")
        error = built[spec.run_id]["validate_error"]
        assert error is None, (spec.run_id, error)


def test_every_override_names_a_field_and_ends_with_the_parity_value(checked) -> None:
    specs, _, built = checked
    for spec in specs:
        out = built[spec.run_id]
        for name, value in _expected(spec).items():
            assert out["values"][name] == value, (spec.run_id, name, out["values"][name])
        assert out["values"]["model.tensor_model_parallel_size"] == spec.parallelism["tp"]
        assert out["values"]["train.global_batch_size"] == spec.global_batch_size, spec.run_id
        ub = spec.parity.recipe.get("comm_overlap.tp_comm_overlap_cfg")
        if ub is not None:
            assert out["tp_comm_overlap_cfg"] == ub, spec.run_id
        assert out["mixed_precision_class"] == "MixedPrecisionConfig"


def test_the_built_model_is_the_shape_flops_count(checked) -> None:
    """The model the library builds from the Hugging Face config is the one whose FLOPs
    the run spec counts (layers, widths, heads, experts, latent attention, MTP)."""
    specs, _, built = checked
    for spec in specs:
        shape = built[spec.run_id]["model_shape"]
        model = {**spec.model, **spec.model.get("extras", {})}
        for ours, theirs in SHAPE.items():
            if ours in model:
                assert shape[theirs] == model[ours], (spec.run_id, ours, shape[theirs])
        if "dense_layers" in model:  # the first k layers have a dense MLP
            freq = shape["moe_layer_freq"]
            assert freq.index(1) == model["dense_layers"] and len(freq) == model["layers"]
        assert built[spec.run_id]["built_vocab"] == spec.model["vocab"], spec.run_id


def test_controls_fail_where_they_must(checked) -> None:
    _, results, built = checked
    unknown = results["control-unknown-field"]
    assert not unknown["ok"]
    assert f"override {UNKNOWN}" in unknown["error"]
    assert "has no field 'no_such_field'" in unknown["error"]
    assert FSDP_REFUSAL in str(built["control-fsdp-load"]["validate_error"])
    save = built["control-save"]
    assert save["values"]["checkpoint.save"] == results["control-save"]["argv"][3]
    assert save["validate_error"] is None
    fsdp_save = built["control-fsdp-save"]
    assert fsdp_save["values"]["checkpoint.ckpt_format"] == "fsdp_dtensor"
    assert fsdp_save["validate_error"] is None  # without the format: FSDP_REFUSAL
