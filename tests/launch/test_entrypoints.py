"""Spec -> framework settings, without the frameworks installed."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from llmbench.errors import LaunchError
from llmbench.launch.entry import FROM_SOURCE
from llmbench.ranks.entrypoints import maxtext, megatron_bridge, nemo2
from llmbench.ranks.entrypoints.common import EntryOptions, apply_overrides, parse_args
from tests.launch.cases import first_scale_specs

SPECS = {s.workload: s for s in first_scale_specs() if s.variant == "perf"}


def test_nemo2_plan_llama_8b() -> None:
    plan = nemo2.plan(EntryOptions(SPECS["llama3.1-nemo"]))
    assert plan.recipe == "llama3_8b"  # the reference's module (catalog/parity.yaml)
    assert plan.recipe_kwargs["performance_mode"] is True and plan.tokenizer_vocab_size == 128255
    assert plan.recipe_kwargs["num_nodes"] == 1 and plan.recipe_kwargs["num_gpus_per_node"] == 8
    o = plan.overrides
    assert o["trainer.max_steps"] == 50
    assert o["trainer.strategy.tensor_model_parallel_size"] == 1
    assert (o["data.micro_batch_size"], o["data.global_batch_size"]) == (1, 128)
    assert not plan.fp8 and not plan.pipeline_bf16 and plan.profile_steps is None


def test_nemo2_fp8_pipeline_and_variants() -> None:
    spec = dataclasses.replace(
        SPECS["nemotron4-nemo"], dtype="fp8", parallelism={"tp": 8, "pp": 4, "cp": 1, "vp": 12}
    )
    plan = nemo2.plan(EntryOptions(spec, profile_steps=(20, 60), load_checkpoint="ck"))
    assert plan.recipe == "nemotron4_15b" and plan.fp8 and plan.pipeline_bf16
    assert plan.overrides["trainer.strategy.virtual_pipeline_model_parallel_size"] == 12
    assert plan.overrides["trainer.max_steps"] == 60  # profiler stop beyond steps
    assert plan.profile_steps == (20, 60) and plan.checkpoint == {"load_dir": "ck"}


def test_unknown_size_names_the_allowed_ones() -> None:
    spec = dataclasses.replace(SPECS["llama3.1-nemo"], size="1b")
    with pytest.raises(LaunchError, match=r"allowed: llama3\.1-nemo 8b"):
        nemo2.plan(EntryOptions(spec))


def test_apply_overrides_sets_dotted_paths() -> None:
    recipe = SimpleNamespace(trainer=SimpleNamespace(strategy=SimpleNamespace()), data=None)
    apply_overrides(recipe, {"trainer.strategy.tensor_model_parallel_size": 4, "data": 1})
    assert recipe.trainer.strategy.tensor_model_parallel_size == 4 and recipe.data == 1


def test_megatron_bridge_overrides() -> None:
    spec = SPECS["llama3.1-mbridge"]
    o = megatron_bridge.overrides(EntryOptions(spec, save_checkpoint="ck"))
    name, fields = megatron_bridge.precision(EntryOptions(spec))  # the first row is fp8
    assert name == megatron_bridge.FP8_RECIPE and "mixed_precision" not in o
    assert fields == {"first_last_layers_bf16": False, "grad_reduce_in_fp32": False}
    assert o["model.tensor_model_parallel_size"] == spec.parallelism["tp"]
    assert o["train.global_batch_size"] == spec.global_batch_size
    assert o["checkpoint.save"] == "ck" and o["checkpoint.save_interval"] == 50
    if spec.parallelism["fsdp"]:
        assert o["ddp.use_megatron_fsdp"] is True


def test_maxtext_argv() -> None:
    spec = dataclasses.replace(SPECS["llama2-maxtext"], dtype="fp8")
    argv = maxtext.argv_for(EntryOptions(spec, profile_steps=(45, 50)))
    assert argv[:2] == [maxtext.TRAIN_PY, maxtext.BASE_CONFIG]
    kv = dict(a.split("=", 1) for a in argv[2:])
    assert kv["per_device_batch_size"] == "2" and kv["dataset_type"] == "synthetic"
    assert (kv["ici_fsdp_parallelism"], kv["dcn_fsdp_parallelism"]) == ("8", "8")  # 64 GPUs
    assert kv["quantization"] == "fp8" and kv["steps"] == "50"
    assert kv["enable_checkpointing"] == "false" and kv["profiler_steps"] == "6"


def test_parse_args_reads_the_spec(tmp_path: Path) -> None:
    path = tmp_path / "run_spec.json"
    path.write_text(json.dumps(SPECS["llama3.1-nemo"].to_dict()))
    opts = parse_args(["--spec", str(path), "--profile-steps", "20", "25"], "t")
    assert opts.spec == SPECS["llama3.1-nemo"] and opts.profile_steps == (20, 25)
    with pytest.raises(LaunchError, match="cannot read the run spec"):
        parse_args(["--spec", str(tmp_path / "missing.json")], "t")


@pytest.mark.parametrize("name", ["nemo2", "megatron_bridge", "maxtext"])
def test_entry_point_runs_from_an_uninstalled_source_tree(name: str, tmp_path) -> None:
    """As in the container: ``python3 <src>/llmbench/ranks/entrypoints/from_source.py
    llmbench.ranks.entrypoints.<name> --help``, from a copy of the source that nothing installed."""
    src = tmp_path / "mount"
    shutil.copytree(Path(nemo2.__file__).resolve().parents[2], src / "llmbench")
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(src / FROM_SOURCE), f"llmbench.ranks.entrypoints.{name}",
         "--help"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    # -I -S: no PYTHONPATH, no site-packages (no editable install): the file must find
    # its own source tree, as in a container.
    # Arguments are parsed before any framework import, so --help works without one.
    assert proc.returncode == 0, proc.stderr
    assert "--profile-steps" in proc.stdout


def test_from_source_names_what_it_runs(tmp_path) -> None:
    from_source = Path(nemo2.__file__).resolve().parents[3] / FROM_SOURCE
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(from_source), "os"], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "llmbench.ranks.entrypoints.<name>" in proc.stderr and "\n" not in proc.stderr.strip()
