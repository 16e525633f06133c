"""Every Megatron-Bridge catalog row's config, built by the real library on a CPU.

The entry point's own code (``megatron_bridge.main --check-only``) builds each row with the
reference's recipe function and llmbench's overrides in Megatron-Bridge 0.1.0rc3 and
Megatron-Core 0.14.0, the versions of the reference image (envs/venv-mbridge.txt,
tests/nemo/conftest.py), reads every override back and runs the library's ``validate()``
at the row's world size. Every override must name a field the library has and end with
the value the parity data asks for. Runs in CI (``CI=true``) or with ``LLMBENCH_MBRIDGE=1``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from llmbench.core.catalog import load_catalog
from llmbench.core.config import run_specs, validate_config
from llmbench.core.parity_settings import Setting
from llmbench.core.runspec import RunSpec
from llmbench.ranks.entrypoints import megatron_bridge

pytestmark = pytest.mark.mbridge

CHECKER = Path(__file__).with_name("check_mbridge.py")
UNKNOWN = "model.no_such_field"
"""A control override the library does not have: the check must reject it."""


def catalog_specs() -> list[RunSpec]:
    """One perf run per Megatron-Bridge catalog row, in the reference's image."""
    specs = []
    for row in load_catalog().rows("llama3.1-mbridge"):
        config = {"sweeps": [row.sweep_entry()], "launcher": "srun", "container": "enroot"}
        specs += run_specs(validate_config(config))
    return specs


def _case(spec: RunSpec, folder: Path, *variant_args: str) -> list[str]:
    spec_file = folder / f"{spec.run_id}.json"
    spec_file.write_text(spec.to_json())
    out = folder / f"{spec.run_id}.out.json"
    return ["--spec", str(spec_file), *variant_args, "--check-only", str(out)]


@pytest.fixture(scope="module")
def checked(mbridge_env, tmp_path_factory):
    python, env = mbridge_env
    folder = tmp_path_factory.mktemp("mbridge")
    specs = catalog_specs()
    first = specs[0]
    save = dataclasses.replace(first, variant="ckpt-save")
    unknown = Setting(kind="recipe", name=UNKNOWN, value=1)
    bad = dataclasses.replace(
        first,
        variant="nccltrace",
        parity=dataclasses.replace(first.parity, settings=(*first.parity.settings, unknown)),
    )
    cases = [_case(s, folder) for s in specs]
    cases += [_case(save, folder, "--save-checkpoint", str(folder / "ck")), _case(bad, folder)]
    cases_file, results_file = folder / "cases.json", folder / "results.jsonl"
    cases_file.write_text(json.dumps(cases))
    proc = subprocess.run(
        [str(python), str(CHECKER), str(cases_file), str(results_file)],
        env=env, cwd=folder, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = {Path(r["argv"][1]).stem: r for r in map(json.loads, results_file.open())}
    built = {
        run_id: json.loads((folder / f"{run_id}.out.json").read_text())
        for run_id, r in results.items()
        if r["ok"]
    }
    overlay = env["PYTHONPATH"].split(os.pathsep)[0]  # the Megatron-Bridge folder
    for result in results.values():
        assert result["megatron_bridge_path"].startswith(overlay), result
    return specs, results, built, save, bad


def test_every_row_builds_in_the_reference_versions_and_passes_validate(checked) -> None:
    specs, results, built, _, _ = checked
    assert len(specs) == len(load_catalog().rows("llama3.1-mbridge")) > 40
    for spec in specs:
        result = results[spec.run_id]
        assert result["ok"], (spec.run_id, result["error"])
        assert (result["megatron_bridge"], result["megatron_core"]) == ("0.1.0rc3", "0.14.0")
        assert built[spec.run_id]["validate_error"] is None, spec.run_id


def _expected(spec: RunSpec) -> dict[str, object]:
    """What the parity data asks the config to end with (recipe and logging settings)."""
    recipe = spec.parity.recipe
    wanted = {
        k: v for k, v in recipe.items()
        if k not in megatron_bridge.SPECIAL and not k.startswith("mixed_")
    }  # fmt: skip
    wanted.update(spec.parity.logging)
    wanted.update({k: v for k, v in recipe.items() if k.startswith("mixed_precision.")})
    return wanted


def test_every_override_names_a_field_and_ends_with_the_parity_value(checked) -> None:
    specs, _, built, _, _ = checked
    for spec in specs:
        out = built[spec.run_id]
        for name, value in _expected(spec).items():
            assert out["values"][name] == value, (spec.run_id, name)
        p = spec.parallelism
        assert out["values"]["model.tensor_model_parallel_size"] == p["tp"], spec.run_id
        assert out["values"]["train.global_batch_size"] == spec.global_batch_size, spec.run_id
        ub = spec.parity.recipe.get("comm_overlap.tp_comm_overlap_cfg")
        if ub is not None:
            assert out["tp_comm_overlap_cfg"] == ub, spec.run_id
        assert out["mixed_precision_class"] == "MixedPrecisionConfig"
        assert out["built_vocab"] == spec.model["vocab"], spec.run_id  # what FLOPs use


def test_the_reference_presets_reach_the_library(checked) -> None:
    specs, _, built, _, _ = checked
    for spec in specs:
        values = built[spec.run_id]["values"]
        assert values["checkpoint.save"] is None, spec.run_id  # no final checkpoint
        if spec.gpu_type == "h100" and spec.size == "70b":  # no recompute in its preset
            assert values["model.recompute_granularity"] is None, spec.run_id
            assert values["model.recompute_num_layers"] is None, spec.run_id


def test_variants_and_an_unknown_field(checked) -> None:
    _, results, built, save, bad = checked
    assert built[save.run_id]["values"]["checkpoint.save"].endswith("/ck")
    assert not results[bad.run_id]["ok"]
    assert f"override {UNKNOWN}" in results[bad.run_id]["error"]
    assert "has no field 'no_such_field'" in results[bad.run_id]["error"]
