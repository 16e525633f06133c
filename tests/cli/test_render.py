"""``llmbench render``: the files a run would get, for every catalog row and every
platform profile, written by the code a real attempt uses, and nothing submitted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from llmbench.cli import main as cli_main
from llmbench.cli.commands.render import ENTRY_CONFIG_FILE, render_run
from llmbench.core.catalog import load_catalog
from llmbench.core.config import check_experiment
from llmbench.job.runner import run_attempt
from llmbench.launch.entry import ENTRY_MODULES
from llmbench.launch.launchers import render_launch_script
from tests.helpers import HERE, REPO, tiny_config

CATALOG = [row for w in load_catalog().workloads() for row in load_catalog().rows(w)]


def _config(path: Path, sweeps: list[dict], **top: object) -> Path:
    path.write_text(yaml.safe_dump({"sweeps": sweeps, **top}))
    return path


def test_every_catalog_row_renders(tmp_path: Path) -> None:
    config = {"sweeps": [row.sweep_entry() for row in CATALOG], "launcher": "srun",
              "container": "enroot"}  # fmt: skip
    specs = check_experiment(config, {}, "config", host=HERE)[1]
    assert {(s.workload, s.size, s.dtype, s.gpu_type, s.gpus, s.scaling) for s in specs} == {
        (r.workload, r.size, r.dtype, r.gpu_type, r.gpus, r.scaling) for r in CATALOG
    }
    for spec in specs:
        folder = tmp_path / spec.run_id
        folder.mkdir()
        names = render_run(spec, folder)
        assert names == ["run_spec.json", "launch.sh", ENTRY_CONFIG_FILE], spec.run_id
        written = json.loads((folder / "run_spec.json").read_text())
        assert written == spec.to_dict() and written["parity"]["stack"]["reference_stack"]
        assert (folder / "launch.sh").read_text() == render_launch_script(spec)
        entry = json.loads((folder / ENTRY_CONFIG_FILE).read_text())
        assert entry["entry_point"] == ENTRY_MODULES[spec.framework], spec.run_id
        if spec.framework == "megatron-bridge":
            o = entry["overrides"]
            assert o["train.global_batch_size"] == spec.global_batch_size
            assert o["checkpoint.save"] is None, spec.run_id
        elif spec.framework == "nemo2":
            assert entry["overrides"]["data.global_batch_size"] == spec.global_batch_size
        else:
            assert f"per_device_batch_size={spec.micro_batch_size}" in entry["argv"]


RUNAI_SITE = {"runai": {"base_url": "https://runai.example.com/api/v1", "app_id": "bench",
                        "project": "bench"}}  # fmt: skip
NEMO_8B = {"workload": "llama3.1-nemo", "sizes": ["8b"], "dtypes": ["bf16"], "gpu_type": "h100",
           "scales": [8]}  # fmt: skip


@pytest.mark.parametrize(
    ("profile", "run_id", "files"),
    [
        ("slurm", "llama3.1-nemo_8b_bf16_h100x8_perf", {"launch.sh", ENTRY_CONFIG_FILE}),
        ("kubernetes", "llama3.1-nemo_8b_bf16_h100x8_perf", {"manifest.yaml", ENTRY_CONFIG_FILE}),
        ("runai", "llama3.1-nemo_8b_bf16_h100x8_perf", {"payload.json", ENTRY_CONFIG_FILE}),
        ("default", "tiny-llama_tiny_fp32_cpux1_perf", {"launch.sh"}),
    ],
)
def test_each_platform_profile_renders(
    profile: str, run_id: str, files: set[str], tmp_path: Path, capsys
) -> None:
    sweeps = [NEMO_8B] if profile != "default" else tiny_config((1,))["sweeps"]
    args = ["render", run_id, "--config", str(_config(tmp_path / "c.yaml", sweeps))]
    site = REPO / "profiles" / profile / "site.yaml"
    if site.exists():
        args += ["--site", str(site)]
    if profile == "runai":
        (tmp_path / "runai.yaml").write_text(yaml.safe_dump(RUNAI_SITE))
        args += ["--site", str(tmp_path / "runai.yaml")]
    out = tmp_path / "out"
    assert cli_main([*args, "-o", str(out)]) == 0
    names = {p.name for p in out.iterdir()}
    assert names == {"run_spec.json", "launch.sh"} | files
    spec = json.loads((out / "run_spec.json").read_text())
    assert spec["run_id"] == run_id and "nothing submitted" in capsys.readouterr().out
    env = {}
    if profile == "kubernetes":
        manifest = yaml.safe_load((out / "manifest.yaml").read_text())
        env = {e["name"]: e["value"] for e in manifest["spec"]["trainer"]["env"]}
    if profile == "runai":
        payload = json.loads((out / "payload.json").read_text())
        env = {e["name"]: e["value"] for e in payload["spec"]["environmentVariables"]}
    if profile == "slurm":
        assert "export NEMO_LOG_MEMORY_USAGE=1" in (out / "launch.sh").read_text()
    if env:  # the reference's environment reaches the platform's pods
        assert env["NEMO_LOG_MEMORY_USAGE"] == "1" and env["NCCL_NVLS_ENABLE"] == "0"
        assert spec["parity"]["stack"]["image"] == "nvcr.io/nvidia/nemo:25.02.01"


def _render(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llmbench.cli", "render", *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_a_bad_run_id_is_one_line_naming_how_to_list_them(tmp_path: Path) -> None:
    """Neither in the config nor a catalog row (no 48-GPU row): both are said."""
    config = _config(tmp_path / "c.yaml", [NEMO_8B])
    proc = _render("llama3.1-nemo_8b_bf16_h100x48_perf", "--config", str(config))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "llama3.1-nemo_8b_bf16_h100x48_perf" in proc.stderr
    assert f"llmbench plan --config {config}" in proc.stderr
    assert "nor a catalog run id: gpus=48 is not a scale" in proc.stderr


def test_nothing_in_a_used_folder_is_overwritten(tmp_path: Path) -> None:
    config = _config(tmp_path / "c.yaml", [NEMO_8B])
    used = tmp_path / "used"
    used.mkdir()
    (used / "launch.sh").write_text("mine")
    proc = _render("llama3.1-nemo_8b_bf16_h100x8_perf", "--config", str(config), "-o", str(used))
    assert proc.returncode == 2 and "not an empty folder" in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert [p.name for p in used.iterdir()] == ["launch.sh"]
    assert (used / "launch.sh").read_text() == "mine"


def test_render_writes_what_a_real_attempt_writes(tmp_path: Path) -> None:
    config = tiny_config((1,), steps=4, window=[2, 3])
    (spec,) = check_experiment(config, {}, "config", host=HERE)[1]
    record = run_attempt(spec, tmp_path / "runs" / spec.run_id)
    assert record["exit_code"] == 0, record
    attempt = tmp_path / "runs" / spec.run_id / record["attempt_dir"]
    rendered = tmp_path / "rendered"
    rendered.mkdir()
    for name in render_run(spec, rendered):
        assert (rendered / name).read_text() == (attempt / name).read_text(), name
