"""``llmbench plan``: runs, nodes and GPU-hours from published step times."""

import json

import pytest
import yaml

from llmbench.cli import main
from tests.helpers import tiny_sweep

CONFIG = {
    "sweeps": [
        {
            "workload": "llama3.1-nemo",
            "sizes": ["8b"],
            "dtypes": ["bf16"],
            "gpu_type": "h100",
            "scales": [8, 16],
        },
        tiny_sweep((1,)),
    ],
    "container": "enroot",
    "images": {"llama3.1-nemo": "nvidia/nemo:25.07"},
}


def run_plan(tmp_path, capsys, config=CONFIG, *args):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    code = main(["plan", "--config", str(path), *args])
    return code, capsys.readouterr()


def test_json_plan_estimates_from_published_step_times(tmp_path, capsys) -> None:
    code, out = run_plan(tmp_path, capsys, CONFIG, "--format", "json")
    assert code == 0
    data = json.loads(out.out)
    rows = {r["run_id"]: r for r in data["runs"]}
    eight = rows["llama3.1-nemo_8b_bf16_h100x8_perf"]
    # 8B BF16 on 8 H100: 12.27 s per step (llama31-nemo2-h100.txt), 50 steps, 8 GPUs.
    assert eight["reference_step_time_s"] == 12.27
    assert eight["est_gpu_hours"] == pytest.approx(50 * 12.27 / 3600 * 8)
    assert eight["nodes"] == 1 and rows["llama3.1-nemo_8b_bf16_h100x16_perf"]["nodes"] == 2
    assert eight["runtime_limit_min"] == 30
    assert rows["tiny-llama_tiny_fp32_cpux1_perf"]["est_gpu_hours"] is None
    summary = data["summary"]
    assert summary["runs"] == 3 and summary["runs_without_estimate"] == 1
    assert summary["est_gpu_hours"] == pytest.approx(50 * 12.27 / 3600 * 8 + 50 * 12.3 / 3600 * 16)
    # the image the workflow imports: the config's, not the catalog's placeholder
    assert summary["images"] == ["nvidia/nemo:25.07"]
    assert eight["image"] == "nvidia/nemo:25.07"
    assert rows["tiny-llama_tiny_fp32_cpux1_perf"]["image"] == ""


def test_bad_config_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    bad = {"sweeps": [{**CONFIG["sweeps"][0], "scales": [12]}]}
    code, out = run_plan(tmp_path, capsys, bad)
    assert code == 2
    assert out.err.count("\n") == 1 and "gpus=12" in out.err


def test_site_file_says_where_and_the_experiment_stays_unchanged(tmp_path, capsys) -> None:
    experiment = {k: v for k, v in CONFIG.items() if k != "container"}
    site = tmp_path / "site.yaml"
    site.write_text("container: enroot\nlauncher: srun\n")
    code, out = run_plan(tmp_path, capsys, experiment, "--format", "json", "--site", str(site))
    assert code == 0 and out.err == ""
    assert json.loads(out.out)["summary"]["images"] == ["nvidia/nemo:25.07"]
    # without the site file the same experiment runs bare: no image to import
    code, out = run_plan(tmp_path, capsys, experiment, "--format", "json")
    assert code == 0 and json.loads(out.out)["summary"]["images"] == []


def test_a_site_key_in_the_experiment_still_works_with_one_warning_line(tmp_path, capsys) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("launcher: srun\n")  # a launcher that starts NeMo: no other warning
    code, out = run_plan(tmp_path, capsys, CONFIG, "--format", "json", "--site", str(site))
    assert code == 0 and json.loads(out.out)["summary"]["images"] == ["nvidia/nemo:25.07"]
    assert out.err.count("\n") == 1 and out.err.startswith("llmbench: warning: ")
    assert ": container: where to run belongs" in out.err and "site.yaml" in out.err
