"""Every NeMo 2 catalog row's recipe, built and checked by the real NeMo toolkit on a CPU.

The venv comes from ``envs/venv-nemo2.txt`` through ``llmbench.setup.venv.build_venv`` (the
code the workflow's venv rule runs; tests/nemo/conftest.py) and is reused while its
requirements are unchanged. It is ~3 GB, so the test runs in CI (``CI=true``) or with
``LLMBENCH_NEMO=1``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from llmbench.core.catalog import load_catalog
from llmbench.core.config import run_specs, validate_config
from llmbench.core.runspec import RunSpec
from llmbench.launch.shell import join
from llmbench.launch.variants import variant_parts

pytestmark = pytest.mark.nemo

REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = REPO / "envs" / "venv-nemo2.txt"
CHECKER = Path(__file__).with_name("check_recipes.py")
WORKLOADS = ("llama3.1-nemo", "nemotron4-nemo")


def nemo_env(**extra: str) -> dict[str, str]:
    """The environment the workflow gives a venv run (``rule_values.launch_env``): this
    checkout's source first, whatever checkout the cached venv's ``.pth`` names."""
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), **extra}


def catalog_specs() -> list[RunSpec]:
    """One perf run per NeMo 2 catalog row (every size, dtype, GPU type, scale, scaling)."""
    catalog = load_catalog()
    specs = []
    for workload in WORKLOADS:
        for row in catalog.rows(workload):
            config = {"sweeps": [row.sweep_entry()], "launcher": "srun"}
            specs += run_specs(validate_config(config))
    return specs


def entry_argv(spec: RunSpec, folder: Path, stage: Path) -> list[str]:
    """The entry point's arguments as launch.sh passes them (its words, expanded by bash)."""
    spec_file = folder / f"{spec.run_id}.json"
    spec_file.write_text(spec.to_json())
    words = join(variant_parts(spec).entry_args)
    expanded = (
        subprocess.run(
            ["bash", "-c", f'printf "%s\\n" {words}'],
            env={"LLMBENCH_STAGE_PATH": str(stage), "PATH": os.environ["PATH"]},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        if words
        else []
    )
    out = folder / f"{spec.run_id}.yaml"
    return ["--spec", str(spec_file), *expanded, "--check-only", str(out)]


def run_checker(python: Path, cases: list[list[str]], folder: Path) -> dict[str, dict]:
    cases_file, results_file = folder / "cases.json", folder / "results.jsonl"
    cases_file.write_text(json.dumps(cases))
    proc = subprocess.run(
        [str(python), str(CHECKER), str(cases_file), str(results_file)],
        env=nemo_env(),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in results_file.read_text().splitlines()]
    assert len(results) == len(cases)
    return {Path(r["argv"][1]).stem: r for r in results}


@pytest.fixture(scope="module")
def checked(nemo_python: Path, tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("nemo-recipes")
    stage = folder / "stage"
    specs = catalog_specs()
    # The variants change the recipe too: profiler callback, checkpoint save and restore.
    first = specs[0]
    variants = [
        dataclasses.replace(first, variant=v) for v in ("profile", "ckpt-save", "ckpt-load")
    ]
    # A control the check must reject: 3-way tensor parallelism of 32 heads.
    bad = dataclasses.replace(
        first, parallelism={**first.parallelism, "tp": 3}, variant="nccltrace"
    )
    cases = [entry_argv(spec, folder, stage) for spec in [*specs, *variants, bad]]
    return specs, run_checker(nemo_python, cases, folder), bad.run_id, folder


def test_every_nemo2_catalog_row_builds_and_passes_nemo_checks(checked) -> None:
    specs, results, _, _ = checked
    rejected = {s.run_id: results[s.run_id]["error"] for s in specs if not results[s.run_id]["ok"]}
    assert len(specs) == sum(len(load_catalog().rows(w)) for w in WORKLOADS)
    assert not rejected, "NeMo rejected:\n" + "\n".join(f"{k}: {v}" for k, v in rejected.items())


def test_recipes_carry_the_catalog_values(checked) -> None:
    specs, results, _, folder = checked
    for spec in specs:
        assert results[spec.run_id]["ok"], results[spec.run_id]["error"]
        recipe = yaml.safe_load((folder / f"{spec.run_id}.yaml").read_text())
        trainer, strategy, data = recipe["trainer"], recipe["trainer"]["strategy"], recipe["data"]
        p = spec.parallelism
        assert strategy["tensor_model_parallel_size"] == p["tp"], spec.run_id
        assert strategy["pipeline_model_parallel_size"] == p["pp"], spec.run_id
        assert strategy["context_parallel_size"] == p["cp"], spec.run_id
        assert strategy.get("virtual_pipeline_model_parallel_size") == p["vp"], spec.run_id
        assert data["global_batch_size"] == spec.global_batch_size, spec.run_id
        assert data["micro_batch_size"] == spec.micro_batch_size, spec.run_id
        assert data["seq_length"] == spec.seq_len, spec.run_id
        assert trainer["num_nodes"] == spec.nodes and trainer["devices"] == spec.gpus_per_node
        assert trainer["max_steps"] == spec.steps, spec.run_id
        assert (trainer["plugins"].get("fp8") is not None) == (spec.dtype == "fp8"), spec.run_id
        if spec.size.endswith("-proxy"):
            assert recipe["model"]["config"]["num_layers"] == spec.model["layers"]


def test_variants_reach_the_recipe(checked) -> None:
    specs, results, _, folder = checked
    first = specs[0].run_id.rsplit("_", 1)[0]
    for variant in ("profile", "ckpt-save", "ckpt-load"):
        assert results[f"{first}_{variant}"]["ok"], results[f"{first}_{variant}"]["error"]
    profile = yaml.safe_load((folder / f"{first}_profile.yaml").read_text())
    callbacks = [c["_target_"].rsplit(".", 1)[-1] for c in profile["trainer"]["callbacks"]]
    assert "NsysCallback" in callbacks
    load = yaml.safe_load((folder / f"{first}_ckpt-load.yaml").read_text())
    assert load["resume"]["restore_config"]["path"].endswith(f"checkpoints/{first}_ckpt-save")


def test_the_check_rejects_what_megatron_rejects(checked) -> None:
    _, results, bad_id, _ = checked
    assert not results[bad_id]["ok"]
    assert "tensor_model_parallel_size" in results[bad_id]["error"]


STEP_CLOCK_SCRIPT = """
import csv, sys, time
import torch
from lightning.pytorch import LightningModule, Trainer
from llmbench.ranks.entrypoints.lightning_clock import StepClock

class Tiny(LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
    def training_step(self, batch, batch_idx):
        time.sleep(0.05)  # a step long enough to time
        return self.layer(batch).sum()
    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=4)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

Trainer(max_steps=6, accelerator="cpu", logger=False, enable_checkpointing=False,
        enable_progress_bar=False, callbacks=[StepClock()]).fit(Tiny())
"""


@pytest.mark.parametrize("telemetry", ["1", ""])
def test_step_clock_times_each_lightning_step(nemo_python: Path, tmp_path, telemetry) -> None:
    env = nemo_env(LLMBENCH_TELEMETRY=telemetry)
    proc = subprocess.run(
        [str(nemo_python), "-c", STEP_CLOCK_SCRIPT], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    clock = tmp_path / "step_clock.csv"
    if not telemetry:  # no telemetry: no clock
        assert not clock.exists()
        return
    rows = [line.split(",") for line in clock.read_text().splitlines()]
    assert rows[0] == ["iteration", "start_unix_s", "end_unix_s"]
    steps = [(int(i), float(a), float(b)) for i, a, b in rows[1:]]
    assert [i for i, _, _ in steps] == list(range(6))
    assert all(b - a >= 0.05 for _, a, b in steps), steps
    assert all(b1 <= a2 for (_, _, b1), (_, a2, _) in itertools.pairwise(steps)), steps


def test_recipe_with_telemetry_has_the_step_clock(nemo_python: Path, tmp_path) -> None:
    spec = next(s for s in catalog_specs() if s.size == "8b" and s.dtype == "bf16")
    argv = entry_argv(spec, tmp_path, tmp_path / "stage")
    env = nemo_env(LLMBENCH_TELEMETRY="1")
    module = "llmbench.ranks.entrypoints.nemo2"
    proc = subprocess.run(
        [str(nemo_python), "-m", module, *argv], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    recipe = (tmp_path / f"{spec.run_id}.yaml").read_text()
    assert "llmbench.ranks.entrypoints.lightning_clock.StepClock" in recipe, recipe[-3000:]
