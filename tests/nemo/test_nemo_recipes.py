"""Every NeMo 2 catalog row's recipe, built and checked by the real NeMo toolkit on a CPU.

The venv comes from ``envs/venv-nemo2.txt`` through ``llmbench.venv.build_venv`` (the
code the workflow's venv rule runs) and is reused while its requirements are unchanged.
It is ~3 GB, so the test runs in CI (``CI=true``) or with ``LLMBENCH_NEMO=1``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from llmbench.catalog import load_catalog
from llmbench.config import run_specs, validate_config
from llmbench.launch.shell import join
from llmbench.launch.variants import variant_parts
from llmbench.runspec import RunSpec
from llmbench.stage import VENV_MARKER
from llmbench.venv import build_venv

pytestmark = pytest.mark.nemo

REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = REPO / "envs" / "venv-nemo2.txt"
CHECKER = Path(__file__).with_name("check_recipes.py")
WORKLOADS = ("llama3.1-nemo", "nemotron4-nemo")


@pytest.fixture(scope="session")
def nemo_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("CI") != "true" and os.environ.get("LLMBENCH_NEMO") != "1":
        pytest.skip("real NeMo check: set LLMBENCH_NEMO=1 (builds a ~3 GB venv; CI does)")
    default = Path.home() / ".cache" / "llmbench" / "venv-nemo2"
    venv = Path(os.environ.get("LLMBENCH_NEMO_VENV", default))
    marker = venv / VENV_MARKER
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if not (marker.is_file() and f"sha256={digest}" in marker.read_text()):
        log = tmp_path_factory.mktemp("venv") / "build.log"
        build_venv(venv, REQUIREMENTS, marker, log=log)
    return venv / "bin" / "python"


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
