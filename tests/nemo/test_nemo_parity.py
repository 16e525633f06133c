"""Parity with the reference, proven on a CPU with the real NeMo toolkit (2.7.3).

For every NeMo 2 catalog row, the entry point's recipe and the reference's recipe (built
independently in ``reference_nemo2.py`` from the reference's code as the audit records it)
are serialised and compared on every field. Each parity setting is then dropped in turn:
the comparison must fail on a row where the setting matters (the test can fail). The
model's built vocabulary is tied to the one FLOPs and MFU use. Runs in CI (``CI=true``) or
with ``LLMBENCH_NEMO=1``, like the other real-NeMo tests.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from llmbench.aggregate.run_facts import model_flops
from llmbench.core.catalog import load_catalog
from llmbench.core.flops import ModelShape, model_flops_per_sample
from tests.nemo.test_nemo_recipes import catalog_specs, nemo_env

pytestmark = pytest.mark.nemo

SCRIPT = Path(__file__).with_name("reference_nemo2.py")
MUTATED_ROWS = (
    "llama3.1-nemo_8b_bf16_h100x8_perf",
    "llama3.1-nemo_70b_fp8_h100x64_perf",
    "llama3.1-nemo_405b-proxy_bf16_h100x64_perf",
    "nemotron4-nemo_15b_fp8_h100x16_perf",
    "nemotron4-nemo_340b_fp8_gb200x128_perf",
    "nemotron4-nemo_340b_bf16_h100x256_perf",
)
"""Rows the mutations are tried on: each family, document, dtype and GPU generation."""
SAME_AS_RECIPE = {"trainer.strategy.sequence_parallel"}
"""Settings the NeMo recipes already set to the reference's value (their ``trainer()``
passes ``sequence_parallel`` = TP > 1): kept explicit, and dropping them must change
nothing. Should a NeMo release change that default, this test says so."""


def _setting_names() -> list[str]:
    names: list[str] = []
    for spec in catalog_specs():
        for s in spec.parity.settings:
            if s.kind in ("recipe", "tokenizer", "logging") and s.name not in names:
                names.append(s.name)
    return names


@pytest.fixture(scope="module")
def compared(nemo_python, tmp_path_factory):
    folder = tmp_path_factory.mktemp("nemo-parity")
    specs = {s.run_id: s for s in catalog_specs()}
    cases = []
    for run_id, spec in specs.items():
        (folder / f"{run_id}.json").write_text(spec.to_json())
        cases.append({"spec": str(folder / f"{run_id}.json")})
    for name in _setting_names():
        cases += [{"spec": str(folder / f"{r}.json"), "drop": [name]} for r in MUTATED_ROWS]
    (folder / "cases.json").write_text(json.dumps(cases))
    out = folder / "results.jsonl"
    proc = subprocess.run(
        [str(nemo_python), str(SCRIPT), str(folder / "cases.json"), str(out)],
        env=nemo_env(), capture_output=True, text=True, timeout=3000, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(results) == len(cases)
    return specs, results


def test_every_nemo2_row_builds_the_reference_recipe(compared) -> None:
    specs, results = compared
    plain = {r["run_id"]: r for r in results if not r["drop"]}
    catalog = load_catalog()
    assert set(plain) == set(specs)
    assert len(specs) == sum(len(catalog.rows(w)) for w in ("llama3.1-nemo", "nemotron4-nemo"))
    bad = {k: r["diff"] for k, r in plain.items() if r["n_diff"]}
    assert not bad, json.dumps(bad, indent=1)[:4000]


@pytest.mark.parametrize("name", _setting_names())
def test_dropping_a_setting_breaks_parity(compared, name: str) -> None:
    _, results = compared
    mutated = [r for r in results if r["drop"] == [name]]
    assert len(mutated) == len(MUTATED_ROWS)
    if name in SAME_AS_RECIPE:
        assert not any(r["n_diff"] for r in mutated), [r["diff"] for r in mutated]
    else:
        assert any(r["n_diff"] for r in mutated), f"dropping {name} changed no recipe field"


def test_flops_use_the_vocabulary_the_model_is_built_with(compared) -> None:
    specs, results = compared
    for r in (r for r in results if not r["drop"]):
        spec = specs[r["run_id"]]
        assert r["built_vocab"] == spec.model["vocab"], r["run_id"]
        shape = ModelShape(**{k: spec.model[k] for k in ModelShape.__dataclass_fields__})
        assert model_flops(spec.model) == model_flops_per_sample(spec.model["flops_formula"], shape)
    # TP 8 pads Llama's 128,256 tokens to a multiple of 1,024.
    assert specs["llama3.1-nemo_405b_bf16_h100x512_perf"].model["vocab"] == 129024


def test_one_stdout_step_line_per_step(compared) -> None:
    _, results = compared
    for r in (r for r in results if not r["drop"]):
        line = r["step_line"]
        assert line["replace_progress_bar"] is True and line["progress_interval"] == 1, r
        assert line["log_every_n_steps"] == 1 and line["enable_progress_bar"] is not False, r
