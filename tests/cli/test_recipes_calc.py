"""``llmbench recipes`` and ``llmbench calc`` through main() and once as a real process."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from llmbench.cli import main
from llmbench.core import metrics
from llmbench.core.catalog import ROW_FIELDS, load_catalog

CAT = load_catalog()


def test_recipes_json_lists_every_row(capsys):
    assert main(["recipes", "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert len(records) == len(CAT.rows())
    assert set(records[0]) == set(ROW_FIELDS)


def test_recipes_filters_and_csv(capsys):
    assert main(["recipes", "--workload", "llama3.1-mbridge", "--gpu-type", "h100",
                 "--format", "csv"]) == 0  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == len(CAT.rows("llama3.1-mbridge", gpu_type="h100")) == 11
    first = rows[0]
    assert first["vp"] == "8" and first["ep"] == "NA" and first["nodes"] == "128"


def test_recipes_table(capsys):
    assert main(["recipes", "--workload", "nemotron4-nemo", "--include-superseded"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["workload", "framework", "size"]
    assert len(out) == 1 + len(CAT.rows("nemotron4-nemo", include_superseded=True))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["recipes", "--workload", "gpt"], "workload=gpt is not a workload"),
        (["recipes", "--gpu-type", "a100"], "gpu_type=a100 is not a gpu_type"),
        (["calc", "--workload", "llama3.1-nemo", "--size", "8b", "--dtype", "bf16",
          "--gpu-type", "h100", "--gpus", "48", "--step-time", "1"],
         "gpus=48 is not a scale of llama3.1-nemo 8b bf16 on h100; allowed: 8, 16, 32"),
        (["calc", "--workload", "llama3.1-nemo", "--size", "8b", "--dtype", "bf16",
          "--gpu-type", "h100", "--gpus", "8", "--step-time", "1", "--gbs", "130"],
         "gbs=130: must be divisible by mbs x dp (4)"),
        (["calc", "--workload", "llama3.1-nemo", "--size", "8b", "--dtype", "bf16",
          "--gpu-type", "h100", "--gpus", "8", "--step-time", "0"],
         "step_time=0.0: must be a positive number"),
        (["calc", "--workload", "nemotron4-nemo", "--size", "340b", "--dtype", "fp8",
          "--gpu-type", "h100", "--gpus", "256", "--step-time", "1", "--scaling", "strong"],
         "scaling=strong is not a scaling"),
    ],
)  # fmt: skip
def test_errors_exit_2_with_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def _calc_json(capsys, *argv: str) -> dict:
    assert main(["calc", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_calc_reproduces_worked_example(capsys):
    """llama31-nemo2-h100.txt: 8192*128/12.39 = 84631; MFU 30.93 % with 4.74e14 flops."""
    out = _calc_json(capsys, "--workload", "llama3.1-nemo", "--size", "8b", "--dtype", "fp8",
                     "--gpu-type", "h100", "--gpus", "8", "--step-time", "12.39")  # fmt: skip
    assert round(out["tokens_per_s"]) == 84631
    assert round(out["days_to_train"], 2) == 136.76
    assert out["tokens_per_s_per_gpu"] == pytest.approx(out["tokens_per_s"] / 8)
    # exact FLOPs (4.7442e14) rather than the printed 4.74e14: 30.96 %, not 30.93 %
    assert out["mfu"] == pytest.approx(30.93e-2 * out["model_flops_per_sample"] / 4.74e14, rel=2e-4)
    assert out["tflops_per_gpu"] == pytest.approx(out["mfu"] * 1979)
    assert set(out) >= {"tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu",
                        "days_to_train", "model_flops_per_sample"}  # fmt: skip


def test_calc_gbs_tokens_and_strong_scaling(capsys):
    out = _calc_json(capsys, "--workload", "nemotron4-nemo", "--size", "340b", "--dtype", "bf16",
                     "--gpu-type", "b200", "--gpus", "256", "--step-time", "10",
                     "--scaling", "strong", "--tokens", "2e12")  # fmt: skip
    assert out["gbs"] == 512
    tps = metrics.tokens_per_s(4096, 512, 10)
    assert out["tokens_per_s"] == pytest.approx(tps)
    assert out["days_to_train"] == pytest.approx(metrics.days_to_train(2e12, tps))
    nemo_8b = ["--workload", "llama3.1-nemo", "--size", "8b", "--dtype", "bf16"]
    gbs = _calc_json(capsys, *nemo_8b, "--gpu-type", "h100", "--gpus", "8", "--step-time", "4",
                     "--gbs", "64")  # fmt: skip
    assert gbs["tokens_per_s"] == pytest.approx(8192 * 64 / 4)
    assert gbs["flags"] == [] and gbs["mfu"] <= 1


def test_calc_table_and_real_subprocess():
    argv = [sys.executable, "-m", "llmbench.cli", "calc", "--workload", "llama2-maxtext",
            "--size", "70b", "--dtype", "bf16", "--gpu-type", "h100", "--gpus", "64",
            "--step-time", "7.908"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "tokens_per_s          66298.43" in done.stdout
    bad = subprocess.run([*argv[:-1], "-1"], capture_output=True, text=True, check=False,
                         timeout=60)  # fmt: skip
    assert bad.returncode == 2
    assert (
        bad.stderr.strip()
        == "llmbench calc: error: step_time=-1.0: must be a positive number of seconds"
    )


def test_calc_refuses_mfu_above_peak_unless_asked(capsys):
    """A step time shorter than the one at 100 % MFU is refused; the flag prints it, flagged."""
    argv = ["--workload", "llama3.1-nemo", "--size", "8b", "--dtype", "bf16",
            "--gpu-type", "h100", "--gpus", "8", "--step-time", "1"]  # fmt: skip
    assert main(["calc", *argv]) == 2
    err = capsys.readouterr().err
    assert "above the h100 bf16 datasheet peak" in err and err.count("\n") == 1
    out = _calc_json(capsys, *argv, "--allow-implausible")
    assert out["mfu"] > 1 and out["flags"] == ["mfu_above_100pct"]
