"""A later reference release end to end before any GPU: every v26.08 row renders, a config
mixing the spec's release with v26.08 plans, dry-runs and renders, and the Exemplar suite's
config plans its 512-GPU runs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from llmbench.cli import main as cli_main
from llmbench.cli.commands.render import ENTRY_CONFIG_FILE, render_run
from llmbench.core.catalog import load_catalog
from llmbench.core.config import check_experiment
from tests.helpers import HERE, REPO, snakemake

CATALOG = load_catalog()
RELEASE_ROWS = CATALOG.rows(release="v26.08")
SITE = {"launcher": "srun", "container": "enroot", "hf_home": "/shared/hf"}


def test_every_release_row_renders(tmp_path: Path) -> None:
    config = {"sweeps": [row.sweep_entry() for row in RELEASE_ROWS], **SITE}
    specs = check_experiment(config, {}, "config", host=HERE)[1]
    assert {(s.workload, s.size, s.dtype, s.gpu_type, s.gpus) for s in specs} == {
        (r.workload, r.size, r.dtype, r.gpu_type, r.gpus) for r in RELEASE_ROWS
    }
    assert len(specs) == len(RELEASE_ROWS) > 100
    for spec in specs:
        folder = tmp_path / spec.run_id
        folder.mkdir()
        assert render_run(spec, folder) == ["run_spec.json", "launch.sh", ENTRY_CONFIG_FILE]
        written = json.loads((folder / "run_spec.json").read_text())
        assert (written["release"], written["precision"]) == ("v26.08", spec.precision)
        assert written["parity"]["stack"]["image"] == "nvcr.io/nvidia/nemo:26.06.01"
        entry = json.loads((folder / ENTRY_CONFIG_FILE).read_text())
        assert entry["recipe"].startswith("megatron.bridge.recipes."), spec.run_id
        assert entry["recipe_kwargs"] == {}  # a release's recipe function takes none
        o = entry["overrides"]
        assert o["train.global_batch_size"] == spec.global_batch_size
        assert o["model.tensor_model_parallel_size"] == spec.parallelism["tp"]
        if spec.parallelism.get("ep"):
            assert o["model.expert_model_parallel_size"] == spec.parallelism["ep"]
        want = {"bf16": "bf16_mixed", "fp8-current": "bf16_with_fp8_current_scaling_mixed",
                "mxfp8": "bf16_with_mxfp8_mixed", "nvfp4": "bf16_with_nvfp4_mixed",
                "fp8-blockwise": "bf16_with_fp8_subchannel_scaling_mixed"}  # fmt: skip
        assert entry["mixed_precision"]["function"] == want[spec.precision], spec.run_id


MIXED = {
    "sweeps": [
        {"workload": "llama3.1-mbridge", "sizes": ["70b"], "dtypes": ["fp8"],
         "gpu_type": "gb200", "scales": [64]},
        {"workload": "llama3.1-mbridge", "release": "v26.08", "sizes": ["70b"],
         "dtypes": ["fp8", "nvfp4"], "gpu_type": "gb200", "scales": [64]},
    ],
}  # fmt: skip
SPEC_RUN = "llama3.1-mbridge_70b_fp8_gb200x64_perf"
V2608_RUNS = ("llama3.1-mbridge_70b_fp8_gb200x64-v26.08_perf",
              "llama3.1-mbridge_70b_nvfp4_gb200x64-v26.08_perf")  # fmt: skip


@pytest.fixture
def mixed(tmp_path: Path) -> tuple[Path, Path]:
    config, site = tmp_path / "mixed.yaml", tmp_path / "site.yaml"
    config.write_text(yaml.safe_dump(MIXED, sort_keys=False))
    site.write_text(yaml.safe_dump(SITE))
    return config, site


def test_a_config_mixing_releases_plans(mixed, capsys) -> None:
    config, site = mixed
    assert cli_main(["plan", "--config", str(config), "--site", str(site)]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line.split() for line in out.splitlines() if "_perf" in line}
    assert set(lines) == {SPEC_RUN, *V2608_RUNS}
    assert lines[SPEC_RUN][8] == "dgxc-2025" and {lines[r][8] for r in V2608_RUNS} == {"v26.08"}
    # the v26.08 FP8 run's estimate from its summary row: GBS 256 on 64 GB200s at 4224
    # tokens/s/GPU is 7.76 s a step
    assert lines[V2608_RUNS[0]][11] == f"{256 * 8192 / (4224 * 64):.2f}"
    assert "nvcr.io/nvidia/nemo:25.09.00, nvcr.io/nvidia/nemo:26.06.01" in out


def test_a_config_mixing_releases_dry_runs(mixed, tmp_path: Path) -> None:
    config, site = mixed
    proc = snakemake(tmp_path, "-n", "--configfile", str(config), str(site))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("rule train:") == 3
    assert proc.stdout.count("rule import_image:") == 2  # one image per release
    for run_id in (SPEC_RUN, *V2608_RUNS):
        assert f"runs/{run_id}/" in proc.stdout, run_id


def test_a_config_mixing_releases_renders(mixed, tmp_path: Path) -> None:
    config, site = mixed
    images = {}
    for run_id in (SPEC_RUN, *V2608_RUNS):
        out = tmp_path / run_id
        args = ["render", run_id, "--config", str(config), "--site", str(site), "-o", str(out)]
        assert cli_main(args) == 0
        spec = json.loads((out / "run_spec.json").read_text())
        images[run_id] = spec["parity"]["stack"]["image"]
        entry = json.loads((out / ENTRY_CONFIG_FILE).read_text())
        gbs = entry["overrides"]["train.global_batch_size"]
        assert gbs == (128 if run_id == SPEC_RUN else 256), run_id  # GPUs x 2 / GPUs x 4
    assert images == {SPEC_RUN: "nvcr.io/nvidia/nemo:25.09.00",
                      **dict.fromkeys(V2608_RUNS, "nvcr.io/nvidia/nemo:26.06.01")}  # fmt: skip


def test_the_exemplar_suite_config_plans_its_512_gpu_runs() -> None:
    path = REPO / "configs" / "exemplar-v26.08.yaml"
    specs = check_experiment(yaml.safe_load(path.read_text()), SITE, str(path), host=HERE)[1]
    assert len(specs) == 38
    assert {s.gpus for s in specs} == {512} and {s.release for s in specs} == {"v26.08"}
    assert {s.variant for s in specs} == {"perf"} and len({s.run_id for s in specs}) == 38
    per_gpu = Counter(s.gpu_type for s in specs)
    assert per_gpu == {"gb300": 9, "gb200": 9, "b300": 9, "b200": 8, "h100": 3}
    precision = {(s.workload, s.size, s.gpu_type, s.dtype): s.precision for s in specs}
    assert precision["llama3.1-mbridge", "405b", "gb300", "fp8"] == "fp8-current"
    assert precision["llama3.1-mbridge", "70b", "b200", "fp8"] == "mxfp8"  # at >= 128 GPUs
    assert precision["qwen3-mbridge", "235b-a22b", "gb300", "fp8"] == "mxfp8"
    assert precision["deepseek-v3-mbridge", "671b", "b300", "nvfp4"] == "nvfp4"


@pytest.mark.parametrize(("release", "rows"), [("v26.08", "v26.08"), (None, "dgxc-2025")])
def test_recipes_lists_a_release(release, rows, capsys) -> None:
    assert cli_main(["recipes", *(["--release", release] if release else [])]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, body = lines[0].split(), [line.split() for line in lines[1:] if line.strip()]
    column = header.index("release")
    assert {row[column] for row in body} == {rows}
    want = CATALOG.rows(release=rows)
    assert len(body) == len(want)
    if release:
        assert {row[0] for row in body} == {"llama3.1-mbridge", "qwen3-mbridge",
                                            "deepseek-v3-mbridge"}  # fmt: skip
