"""``llmbench render RUN_ID`` for any catalog row without a config that names it: the sweep
entry read from the id (every row of every release round-trips), the config's steps and
window still used, a site without a container rendered as it is and said so, and a bad id
refused in one line naming the part that is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llmbench.cli import main
from llmbench.core.catalog import load_catalog
from llmbench.core.config import run_specs, validate_config
from llmbench.core.run_ids import sweep_entry_for
from llmbench.errors import ConfigError
from tests.bad_inputs.checks import one_error_line, run_cli
from tests.helpers import REPO

QWEN = "qwen3-mbridge_235b-a22b_bf16_h100x256-v26.08_perf"
SLURM_SITE = str(REPO / "profiles" / "slurm" / "site.yaml")
ROWS = load_catalog().rows(release=None)


def test_every_catalog_run_id_names_its_own_sweep_entry() -> None:
    """Every row of every release, and each variant: the id read back gives the same run."""
    sweeps = [row.sweep_entry() for row in ROWS]
    specs = run_specs(validate_config({"sweeps": sweeps, "launcher": "srun"}))
    assert len(specs) == len(ROWS)
    for spec in specs:
        for variant in ("perf", "nccltrace"):
            run_id = spec.run_id.replace("_perf", f"_{variant}")
            entry = sweep_entry_for(run_id)
            [again] = run_specs(validate_config({"sweeps": [entry], "launcher": "srun"}))
            assert again.run_id == run_id


def test_a_catalog_run_id_renders_with_no_config(tmp_path: Path, monkeypatch, capsys) -> None:
    """The acceptance command: no config names the run; the stock Slurm site runs it in the
    reference's image, for at least the reference's 2 h."""
    monkeypatch.chdir(tmp_path)  # no config.yaml here
    out = tmp_path / "D"
    assert main(["render", QWEN, "--site", SLURM_SITE, "-o", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"{out}: run_spec.json, launch.sh, entry_config.json (nothing submitted)"]
    spec = json.loads((out / "run_spec.json").read_text())
    assert (spec["run_id"], spec["release"], spec["gpus"]) == (QWEN, "v26.08", 256)
    assert (spec["launcher"], spec["container"]) == ("srun", "enroot")
    assert spec["image"] == "nvcr.io/nvidia/nemo:26.06.01"
    assert spec["limits"]["time_limit_s"] >= 2 * 3600
    entry = json.loads((out / "entry_config.json").read_text())
    assert entry["recipe"].endswith("qwen3_235b_a22b_pretrain_config")


def test_a_site_without_a_container_renders_with_a_note(tmp_path: Path, capsys) -> None:
    site = tmp_path / "site.yaml"
    site.write_text(yaml.safe_dump({**yaml.safe_load(Path(SLURM_SITE).read_text()),
                                    "container": "none"}))  # fmt: skip
    out = tmp_path / "D"
    assert main(["render", QWEN, "--site", str(site), "-o", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1].startswith("note: the site sets no container (container: none)")
    assert "nvcr.io/nvidia/nemo:26.06.01" in printed[1]
    assert json.loads((out / "run_spec.json").read_text())["container"] == "none"


def test_the_config_still_gives_steps_and_window(tmp_path: Path, capsys) -> None:
    config = tmp_path / "c.yaml"
    other = {"workload": "llama3.1-nemo", "sizes": ["8b"], "dtypes": ["bf16"],
             "gpu_type": "h100", "scales": [8]}  # fmt: skip
    config.write_text(yaml.safe_dump({"sweeps": [other], "steps": 60, "window": [40, 49],
                                      "container": "enroot"}))  # fmt: skip
    out = tmp_path / "o"
    argv = ["render", QWEN, "--config", str(config), "--site", SLURM_SITE, "-o", str(out)]
    assert main(argv) == 0
    assert "note:" not in capsys.readouterr().out  # the reference's image: nothing to say
    spec = json.loads((out / "run_spec.json").read_text())
    assert (spec["steps"], spec["window"]) == (60, [40, 49])
    assert spec["parity"]["stack"]["reference_stack"] is True


def test_release_from_the_option_for_an_id_without_one(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    untagged = QWEN.replace("-v26.08", "")
    out = tmp_path / "o"
    argv = ["render", untagged, "--release", "v26.08", "--site", SLURM_SITE, "-o", str(out)]
    assert main(argv) == 0
    assert json.loads((out / "run_spec.json").read_text())["run_id"] == QWEN


def test_release_option_is_read_by_the_one_rule(tmp_path: Path, monkeypatch) -> None:
    """``--release " V26.08"`` is ``v26.08``, as a sweep entry's ``release:`` is."""
    monkeypatch.chdir(tmp_path)
    untagged = QWEN.replace("-v26.08", "")
    out = tmp_path / "o"
    argv = ["render", untagged, "--release", " V26.08", "--site", SLURM_SITE, "-o", str(out)]
    assert main(argv) == 0
    assert json.loads((out / "run_spec.json").read_text())["run_id"] == QWEN


BAD = {  # run id (and options) -> the words of its one line
    "nope_run": ["run id 'nope_run': not of the form", "allowed: e.g. " + QWEN],
    "qwen3-mbridge_999b_bf16_h100x256-v26.08_perf": ["size=999b is not a size", "235b-a22b"],
    "qwen3-mbridge_235b-a22b_fp32_h100x256-v26.08_perf": ["dtype=fp32", "allowed: bf16"],
    "qwen3-mbridge_235b-a22b_bf16_a100x256-v26.08_perf": ["gpu_type=a100", "allowed: b200"],
    "qwen3-mbridge_235b-a22b_bf16_h100x7-v26.08_perf": ["gpus=7 is not a scale", "256, 512"],
    "qwen3-mbridge_235b-a22b_bf16_h100256-v26.08_perf": ["scale 'h100256-v26.08'", "h100x256"],
    "qwen3-mbridge_235b-a22b_bf16_h100x256-v26.08_fast": ["variant 'fast'", "allowed: perf"],
    "gpt_8b_bf16_h100x8_perf": ["workload=gpt is not a workload", "llama3.1-nemo"],
    "llama3.1-nemo_8b_bf16_h100x8-strong_perf": ["scaling=strong", "allowed: weak"],
    "qwen3-mbridge_235b-a22b_bf16_h100x256_perf": ["release=dgxc-2025 is not a release",
                                                   "allowed: v26.08", "h100x256-v26.08"],
    QWEN + " --release spec": ["of release v26.08, not --release dgxc-2025",
                               "or --release v26.08"],
    "llama3.1-nemo_8b_bf16_h100x48_perf": ["gpus=48 is not a scale"],
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_run_id_is_one_line_naming_the_part(
    case: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)  # no config.yaml: the id alone
    argv = ["render", *case.split(), "--site", SLURM_SITE, "-o", str(tmp_path / "o")]
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == ""
    one_error_line(err, "llmbench render: error: run id", *BAD[case])
    assert not (tmp_path / "o").exists()


def test_sweep_entry_for_refuses_without_the_cli() -> None:
    with pytest.raises(ConfigError, match="variant 'x' is not a variant"):
        sweep_entry_for("llama3.1-nemo_8b_bf16_h100x8_x")
