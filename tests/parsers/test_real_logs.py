"""The parser against the corpus of real public logs (tests/fixtures/real-logs/).

The expected values in manifest.yaml come from compute_expected.py, a separate small
script over the raw lines; the first test keeps the manifest in step with that script.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from llmbench.cli import main
from llmbench.parsers import Reason, Status, parse_log

CORPUS = Path(__file__).parents[1] / "fixtures" / "real-logs"
CASES = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))["cases"]
REL = 1e-6


def case_id(case: dict) -> str:
    return f"{case['file']}[{case['window']}]"


def test_manifest_matches_the_independent_script() -> None:
    script = CORPUS / "compute_expected.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_corpus_has_every_framework_a_restart_and_a_failure() -> None:
    files = {c["file"]: c for c in CASES}
    assert len(files) >= 8
    assert {c["framework"] for c in CASES} == {"nemo2", "megatron", "maxtext"}
    assert any(c["expected"]["restarts"] > 0 for c in CASES)
    assert any(c["expected"]["status"] == "failed" for c in CASES)
    for case in CASES:
        assert (CORPUS / case["file"]).is_file()
        assert set(case["source"]) >= {"repository", "path", "commit", "excerpt"}


def _close(got: float, want: float | None) -> bool:
    if want is None:
        return math.isnan(got)
    return math.isclose(got, want, rel_tol=REL, abs_tol=0.0 if want else 1e-12)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_corpus_log_parses_to_its_manifest_values(case: dict) -> None:
    want = case["expected"]
    s = parse_log(
        CORPUS / case["file"], str(case["window"]), peak_tflops=case.get("peak_tflops")
    ).summary
    assert s.framework == case["framework"]
    assert (s.status, s.reason) == (want["status"], case["reason"]), s.detail
    assert _close(s.step_time_mean_s, want["step_time_mean_s"])
    assert _close(s.step_time_std_s, want["step_time_std_s"])
    assert _close(s.tflops_per_gpu_mean, want["tflops_per_gpu_mean"])
    assert s.window_iterations == want["window_iterations"]
    assert s.max_iteration == want["max_iteration"]
    assert s.log_interval == want["log_interval"]
    assert s.restarts == want["restarts"]
    assert s.flags == want["flags"]


def test_the_restart_story_is_told() -> None:
    s = parse_log(CORPUS / "nemo2-resiliency-crash-restart.out", "10-19").summary
    assert (s.status, s.reason) == (Status.SUCCESS.value, Reason.RESTARTED.value)
    assert s.detail == "1 restart after python_exception"
    assert s.extra["failures_before_restart"] == ["python_exception: Exception"]


def _independent_script():
    """compute_expected.py as a module (it lives beside the corpus, not in a package)."""
    spec = importlib.util.spec_from_file_location(
        "compute_expected", CORPUS / "compute_expected.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_parse_prints_one_correct_row_per_log_in_a_mixed_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One folder holding every framework's real log, parsed with one window (last:5):
    one row each, with the values the independent script computes for that window."""
    script = _independent_script()
    frameworks = {c["file"]: c["framework"] for c in CASES}
    for name in frameworks:
        shutil.copy(CORPUS / name, tmp_path / name)
    code = main(["parse", str(tmp_path), "--format", "csv", "--window", "last:5"])
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sorted(r["filename"] for r in rows) == sorted(Path(f).stem for f in frameworks)
    for row in rows:
        name = row["filename"] + ".out"
        case = {"file": name, "framework": frameworks[name], "window": "last:5"}
        want = script.expected(case, 4900.0)
        assert row["framework"] == frameworks[name]
        assert row["status"] == want["status"], name
        if want["step_time_mean_s"] is None:  # a one-step log: nothing in the last five
            assert (row["time_mean_seconds"], row["time_std_dev_seconds"]) == ("", ""), name
        else:
            mean = float(row["time_mean_seconds"])
            assert mean == pytest.approx(want["step_time_mean_s"], REL)
            assert float(row["time_std_dev_seconds"]) == pytest.approx(
                want["step_time_std_s"], rel=REL, abs=1e-12
            )
        assert int(row["max_iteration"]) == want["max_iteration"]
        assert int(row["log_interval"]) == want["log_interval"]
        assert int(row["restarts"]) == want["restarts"]
    assert code == 0
