"""``llmbench calc`` for every release's rows (MoE, every precision): the runs table's numbers
for a run of that row, the published summary rows back from their step times, where the GBS
comes from, and the probe's calc cases (notes: bad-input probe 4, CA1-CA14)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from llmbench.aggregate.run_facts import peak_for
from llmbench.cli import main
from llmbench.core.catalog.published import load_summaries
from llmbench.core.config import run_specs, validate_config
from tests.aggregate.test_runs_and_steps import SUMMARY
from tests.helpers import runs_table_from_records

DEEPSEEK = ["--workload", "deepseek-v3-mbridge", "--size", "671b"]
QWEN_235B = ["--workload", "qwen3-mbridge", "--size", "235b-a22b"]
V2608 = ["--release", "v26.08"]


def _json(capsys, *argv: str) -> dict:
    assert main(["calc", *argv, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _table(*argv: str) -> dict[str, str]:
    """The table output of a real ``llmbench calc`` process: name -> first value."""
    done = subprocess.run([sys.executable, "-m", "llmbench.cli", "calc", *argv],
                          capture_output=True, text=True, check=False, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    values = {line.split()[0]: line.split()[1] for line in lines[2:]}
    return {"header": "\n".join(lines[:2]), **values}


def test_deepseek_v3_gb300_as_published():
    """The acceptance command: 6288 tokens/s/GPU and NVIDIA's 1635 TFLOP/s/GPU within 1 %."""
    out = _table(*V2608, *DEEPSEEK, "--dtype", "fp8", "--gpu-type", "gb300", "--gpus", "256",
                 "--gbs", "4096", "--step-time", "10.4224")  # fmt: skip
    assert out["tokens_per_s_per_gpu"] == "6288.00"
    assert float(out["tflops_per_gpu"]) == pytest.approx(1635, rel=0.01)
    assert "release v26.08, precision mxfp8" in out["header"]
    assert "gbs 4096 (from --gbs)" in out["header"]


def test_release_option_is_read_by_the_one_rule(capsys):
    """``--release " V26.08"`` is ``v26.08``; a release that is none is one line naming it."""
    args = [*DEEPSEEK, "--dtype", "fp8", "--gpu-type", "gb300", "--gpus", "256",
            "--step-time", "10.4224"]  # fmt: skip
    assert _json(capsys, "--release", " V26.08", *args)["release"] == "v26.08"
    assert main(["calc", "--release", "v2", *args]) == 2
    assert "release: 'v2' is not a release; allowed: dgxc-2025, v26.08" in capsys.readouterr().err


def test_qwen3_235b_from_its_published_row():
    """The step time of the published Qwen3 235B-A22B GB300 row (the 26.06.01 container's,
    the one the recipe pins) gives its numbers back."""
    [row] = [s for s in load_summaries() if s.key() == ("qwen3-mbridge", "235b-a22b", "fp8",
                                                         "gb300", 256)
             and s.container.endswith(":26.06.01")]  # fmt: skip
    out = _table(*V2608, *QWEN_235B, "--dtype", row.precision, "--gpu-type", "gb300",
                 "--gpus", "256", "--step-time", repr(row.step_time_s))  # fmt: skip
    assert float(out["tokens_per_s_per_gpu"]) == pytest.approx(row.tokens_per_s_per_gpu)
    assert float(out["tflops_per_gpu"]) == pytest.approx(row.tflops_per_gpu, rel=0.01)
    assert "gbs 8192 (the catalog row's; --gbs to change)" in out["header"]


@pytest.mark.parametrize(
    "row",
    [s for s in load_summaries() if s.workload in ("qwen3-mbridge", "deepseek-v3-mbridge")],
    ids=lambda s: f"{s.workload}-{s.gpu_type}x{s.gpus}",
)
def test_every_moe_summary_row_comes_back_from_its_step_time(capsys, row):
    out = _json(capsys, "--release", row.release, "--workload", row.workload, "--size",
                row.size, "--dtype", row.precision, "--gpu-type", row.gpu_type,
                "--gpus", str(row.gpus), "--gbs", str(row.gbs),
                "--step-time", repr(row.step_time_s))  # fmt: skip
    assert out["tokens_per_s_per_gpu"] == pytest.approx(row.tokens_per_s_per_gpu)
    assert out["tflops_per_gpu"] == pytest.approx(row.tflops_per_gpu, rel=0.01)
    assert out["precision"] == row.precision and out["gbs_from"] == "--gbs"


ROWS = [  # (sweep entry, step time): MoE, every precision, a padded vocabulary (TP 4 and 8)
    ({"workload": "deepseek-v3-mbridge", "sizes": ["671b"], "dtypes": ["fp8"],
      "gpu_type": "h100", "scales": [1024], "release": "v26.08"}, 31.0),  # fp8-blockwise
    ({"workload": "deepseek-v3-mbridge", "sizes": ["671b"], "dtypes": ["nvfp4"],
      "gpu_type": "gb300", "scales": [512], "release": "v26.08"}, 9.5),
    ({"workload": "qwen3-mbridge", "sizes": ["30b-a3b"], "dtypes": ["fp8"],
      "gpu_type": "b300", "scales": [8], "release": "v26.08"}, 6.4),  # mxfp8
    ({"workload": "qwen3-mbridge", "sizes": ["235b-a22b"], "dtypes": ["bf16"],
      "gpu_type": "h100", "scales": [256], "release": "v26.08"}, 60.0),
    ({"workload": "llama3.1-mbridge", "sizes": ["405b"], "dtypes": ["fp8"],
      "gpu_type": "h100", "scales": [1024], "release": "v26.08"}, 20.0),  # TP 8
    ({"workload": "llama3.1-mbridge", "sizes": ["70b"], "dtypes": ["nvfp4"],
      "gpu_type": "b200", "scales": [64], "release": "v26.08"}, 4.0),
    ({"workload": "llama3.1-nemo", "sizes": ["70b"], "dtypes": ["fp8"],
      "gpu_type": "h100", "scales": [64]}, 10.0),  # the spec's release, TP 4
]  # fmt: skip


@pytest.mark.parametrize(("entry", "step_time_s"), ROWS, ids=lambda v: str(v)[:60])
def test_calc_gives_what_the_runs_table_gives(capsys, entry, step_time_s):
    """The runs table of a run of the row at that step time (spec_columns and
    runs_table_from_frames, the aggregate job's path) and calc agree to the last bit."""
    [spec] = run_specs(validate_config({"launcher": "srun", "container": "enroot",
                                        "sweeps": [entry]}))  # fmt: skip
    record = {"run_id": spec.run_id, "attempt": 1, "spec": spec.to_dict(), "log": "train.log",
              "started_at": "2026-01-01T00:00:00+00:00",
              "finished_at": "2026-01-01T01:00:00+00:00"}  # fmt: skip
    summary = {**SUMMARY, "step_time_mean_s": step_time_s, "step_time_last_s": step_time_s}
    [runs] = runs_table_from_records([(record, summary, peak_for(record["spec"], None))],
                                     1e12).to_dict("records")  # fmt: skip
    out = _json(capsys, "--release", spec.release, "--workload", spec.workload,
                "--size", spec.size, "--dtype", spec.dtype, "--gpu-type", spec.gpu_type,
                "--gpus", str(spec.gpus), "--step-time", str(step_time_s))  # fmt: skip
    assert out["tokens_per_s_per_gpu"] == runs["tokens_per_s_per_gpu"]
    assert out["tflops_per_gpu"] == runs["achieved_tflops_per_gpu"]
    assert out["mfu"] == runs["mfu"] and out["mfu_bf16"] == runs["mfu_bf16"]
    assert out["model_flops_per_sample"] == runs["model_flops_per_sample"]
    assert out["days_to_train"] == runs["days_to_train"]
    assert out["precision"] == runs["precision"] and out["gbs"] == runs["global_batch_size"]


def test_the_output_says_where_the_gbs_comes_from(capsys):
    row = [*V2608, *DEEPSEEK, "--dtype", "bf16", "--gpu-type", "gb300", "--gpus", "256",
           "--step-time", "12"]  # fmt: skip
    assert _json(capsys, *row)["gbs_from"] == "catalog"
    given = _json(capsys, *row, "--gbs", "2048")
    assert (given["gbs"], given["gbs_from"]) == (2048, "--gbs")
    assert main(["calc", *row]) == 0
    assert "gbs 4096 (the catalog row's; --gbs to change)" in capsys.readouterr().out


CASES = {  # case id -> (arguments, the error's words; None: computed, exit 0)
    "CA1": ([*DEEPSEEK, "--dtype", "nvfp4", "--gpu-type", "gb300", "--gpus", "512",
             "--step-time", "10"], ["release=dgxc-2025 is not a release of deepseek-v3-mbridge",
                                    "allowed: v26.08 (--release)"]),
    "CA2": ([*V2608, *QWEN_235B, "--dtype", "fp8", "--gpu-type", "gb300", "--gpus", "512",
             "--step-time", "5"], None),
    "CA3": ([*V2608, "--workload", "llama3.1-mbridge", "--size", "70b", "--dtype", "nvfp4",
             "--gpu-type", "h100", "--gpus", "64", "--step-time", "5"],
            ["gpu_type=h100 is not a gpu_type", "allowed: b200, b300, gb200, gb300"]),
    "CA4": ([*V2608, *DEEPSEEK, "--dtype", "bf16", "--gpu-type", "gb300", "--gpus", "8",
             "--step-time", "10"], ["gpus=8 is not a scale", "allowed: 128, 256, 512"]),
    "CA5": ([*V2608, *DEEPSEEK, "--dtype", "nvfp4", "--gpu-type", "gb300", "--gpus", "512",
             "--step-time", "0.01"], ["step_time=0.01", "nvfp4 datasheet peak of 14700"]),
    "CA6": ([*V2608, *DEEPSEEK, "--dtype", "fp8", "--gpu-type", "gb300", "--gpus", "256",
             "--step-time", "10"], None),
    "CA7": ([*V2608, *DEEPSEEK, "--dtype", "mxfp8", "--gpu-type", "h100", "--gpus", "1024",
             "--step-time", "30"], ["dtype=mxfp8", "trains fp8-blockwise",
                                    "allowed: fp8, fp8-blockwise"]),
    "CA8": ([*V2608, "--workload", "qwen3-mbridge", "--size", "30b-a3b", "--dtype", "bf16",
             "--gpu-type", "gb300", "--gpus", "8", "--step-time", "5", "--gbs", "7"],
            ["gbs=7: must be divisible"]),
    "CA9": ([*V2608, *DEEPSEEK, "--dtype", "bf16", "--gpu-type", "gb300", "--gpus", "512",
             "--step-time", "1e6"], ["step_time=1000000.0", "to 86400 s"]),
    "CA10": ([*V2608, *QWEN_235B, "--dtype", "bf16", "--gpu-type", "h100", "--gpus", "512",
              "--step-time", "30", "--tokens", "1e30"], None),
    "CA11": ([*V2608, "--workload", "llama3.1-mbridge", "--size", "405b", "--dtype", "nvfp4",
              "--gpu-type", "b300", "--gpus", "512", "--step-time", "30"], None),
    "CA12": ([*V2608, *DEEPSEEK, "--dtype", "fp8", "--gpu-type", "gb300", "--gpus", "512",
              "--step-time", "10", "--gbs", "0"], ["gbs=0: must be a positive integer"]),
    "CA13": ([*V2608, *DEEPSEEK, "--dtype", "fp8", "--gpu-type", "gb300", "--gpus", "512",
              "--step-time", "10", "--gbs", str(10**30)],
             [f"gbs={10**30}: one step would take", "allowed: a GBS of at most"]),
    "CA14": ([*V2608, *QWEN_235B, "--dtype", "fp8", "--gpu-type", "gb300", "--gpus", "512",
              "--step-time", "5", "--scaling", "strong"],
             ["scaling=strong is not a scaling", "allowed: weak"]),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES, key=lambda c: int(c[2:])))
def test_probe_calc_cases(capsys, case):
    argv, words = CASES[case]
    if words is None:
        out = _json(capsys, *argv)
        assert 0 < out["mfu"] <= 1 and out["release"] == "v26.08" and out["flags"] == []
        assert out["tokens_per_s_per_gpu"] > 0 and out["days_to_train"] > 0
        return
    assert main(["calc", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err
