"""The fourth bad-input probe's `llmbench explain` cases (E12-E50): a half-broken or older
results folder is read through one checked reader (``llmbench.aggregate.explain_inputs``).

Each case damages a copy of one results folder as the aggregate job leaves it (a GPU run
slower than its reference, with a deliberate launch difference and a throttled GPU:
``tests/aggregate/test_explain.build_results``) and runs `llmbench explain` on it. A runs
table that cannot be read is one line and exit 2; any other damaged or missing file is a
``checked`` line naming the file and why, the rest of the run is still explained, exit 0,
no traceback, and JSON output is strict. The FIFO cases run in a process of their own
under a time limit, since a hang is what they would show."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

from llmbench.job.run_record import attempt_transport
from tests.aggregate.test_explain import RUN, build_results
from tests.bad_inputs.checks import one_error_line, run_cli

OLD_VERSION = "0.1.0"
"""The llmbench version the folder's tables/sweep.json names (an older one)."""
RUN_DIR = f"runs/{RUN}"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results folder every case damages a copy of."""
    results = build_results(tmp_path_factory.mktemp("explain"), throttled_gpu=7, reference_s=6.0)
    sweep = json.loads((results / "tables/sweep.json").read_text())
    (results / "tables/sweep.json").write_text(
        json.dumps({**sweep, "llmbench_version": OLD_VERSION})
    )
    return results


@pytest.fixture
def results(pristine: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy to damage; removed after the test (the session's check of every run record
    it produced, tests/result_files.py, would read the damage, or block on a FIFO)."""
    copy = tmp_path / "e"
    shutil.copytree(pristine, copy)
    yield copy
    shutil.rmtree(tmp_path)


def edit_table(path: Path, change: Callable[[pd.DataFrame], pd.DataFrame]) -> None:
    change(pd.read_parquet(path)).to_parquet(path)


def edit_json(path: Path, change: Callable[[dict], object]) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def fifo(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    os.mkfifo(path)


def nodes_table(results: Path, frame: pd.DataFrame) -> None:
    frame.to_parquet(results / "tables/nodes.parquet")


def explained(results: Path, capsys, *extra: str) -> tuple[dict, str]:
    """`llmbench explain RUN` in JSON (parsed strictly) and as text: exit 0 both times,
    nothing on stderr."""
    argv = ["explain", RUN, "--results", str(results), *extra]
    code, out, err = run_cli([*argv, "--format", "json"], capsys)
    assert code == 0 and err == "", err[-2000:]
    (got,) = json.loads(out, parse_constant=_refuse)
    code, text, err = run_cli(argv, capsys)
    assert code == 0 and err == "" and text.startswith(f"{RUN}: verdict slower"), err
    return got, text


def _refuse(name: str) -> None:
    raise AssertionError(f"{name} in JSON output")


def checked(got: dict, prefix: str) -> str:
    (line,) = [c for c in got["checked"] if c.startswith(prefix)]
    return line


def kinds(got: dict) -> set[str]:
    return {item["kind"] for item in got["items"]}


# --- the runs table: nothing to explain without it, one line, exit 2 -------------------

FATAL = {
    "E12": (truncate, "not a readable Parquet file"),
    "E13": (lambda p: p.write_bytes(b""), "not a readable Parquet file"),
    "E15": (lambda p: (p.unlink(), p.mkdir()), "not a regular file but a folder"),
    "E16": (
        lambda p: edit_table(p, lambda df: df.drop(columns=["run_id"])),
        f"no column run_id (a table of another llmbench: tables/sweep.json names llmbench "
        f"{OLD_VERSION}",
    ),
}


@pytest.mark.parametrize("case", sorted(FATAL))
def test_an_unreadable_runs_table_is_one_line(case: str, results: Path, capsys) -> None:
    damage, words = FATAL[case]
    damage(results / "tables/runs.parquet")
    code, out, err = run_cli(["explain", RUN, "--results", str(results)], capsys)
    assert code == 2 and out == ""
    one_error_line(err, "tables/runs.parquet", words, prefix="llmbench explain: error: --results: ")


# --- everything else: a checked line naming the file, the rest explained, exit 0 --------


def test_e17_runs_table_of_an_older_layout(results: Path, capsys) -> None:
    edit_table(
        results / "tables/runs.parquet",
        lambda df: df.drop(columns=["workload", "gpus", "global_batch_size"]),
    )
    got, _ = explained(results, capsys)
    line = checked(got, "published row")
    assert line.startswith("published row: not compared: tables/runs.parquet: no column")
    assert "workload, gpus, global_batch_size" in line and OLD_VERSION in line
    assert {"telemetry", "launch"} <= kinds(got)


def test_e19_a_run_listed_twice_is_explained_once(results: Path, capsys) -> None:
    edit_table(results / "tables/runs.parquet", lambda df: pd.concat([df, df]))
    code, out, _ = run_cli(
        ["explain", "--all", "--results", str(results), "--format", "json"], capsys
    )
    (got,) = json.loads(out)
    assert code == 0 and "holds 2 rows for this run; the last is explained" in got["checked"][-1]


RECORD = {  # damage to run.json: transport and launch say they were not checked
    "E22": (lambda p: p.unlink(), "missing"),
    "E23": (truncate, "not JSON, truncated or damaged"),
    "E24": (lambda p: p.write_text("[1, 2, 3]"), "not a JSON object but list"),
    "E45": (lambda p: (shutil.rmtree(p.parent), p.parent.write_text("x")), "Not a directory"),
    "E44": (lambda p: shutil.rmtree(p.parents[1]), "missing"),
    "E47": (lambda p: edit_json(p, lambda r: {**r, "spec": "garbage"}), "spec: 'garbage' is not"),
    "E48": (
        lambda p: edit_json(p, lambda r: {**r, "attempt_dir": "../../.."}),
        "attempt_dir: '../../..' does not match",
    ),
    "E48-old": (
        lambda p: edit_json(
            p,
            lambda r: (
                {k: v for k, v in r.items() if k != "schema_version"} | {"attempt_dir": "../../.."}
            ),
        ),
        "attempt_dir: '../../..' is not an attempt folder of the run",
    ),
    "record-newer": (
        lambda p: edit_json(p, lambda r: {**r, "schema_version": "9.0.0"}),
        "schema_version '9.0.0' (this llmbench reads 1.0.0)",
    ),
}


@pytest.mark.parametrize("case", sorted(RECORD))
def test_a_damaged_run_record_is_named_and_the_rest_explained(case: str, results: Path, capsys):
    damage, words = RECORD[case]
    damage(results / RUN_DIR / "run.json")
    if case.startswith("E48"):  # a debug file outside the run folder must not be read
        (results.parent / "nccl-debug.outside.1.log").write_text(
            "gpu1:1:1 [0] NCCL INFO Using network Socket\n"
        )
    got, text = explained(results, capsys)
    for kind in ("transport", "launch"):
        line = checked(got, kind)
        assert line.startswith(f"{kind}: not checked: {RUN_DIR}/run.json: ") and words in line
    assert "launch" not in kinds(got) and "telemetry" in kinds(got)  # the table's evidence
    assert "outside" not in text
    if case.startswith("E48"):
        record = json.loads((results / RUN_DIR / "run.json").read_text())
        assert attempt_transport(results / RUN_DIR, record).files == []  # the aggregate job's read


TRANSPORT = {  # damage to transport.json: the attempt's debug files are read instead
    "E28": (
        {
            "attempt": 1,
            "files": ["a.log"],
            "evidence": [{"file": "a.log", "line": 1}],
            "socket_inter_node": True,
        },
        "evidence[0]: not a fact, file and line",
    ),
    "E29": ({"attempt": 1, "files": 5}, "files: '5' is not list"),
    "transport-list": ([1, 2], "not a JSON object but list"),
    "E26": ('{"attempt": 1, "files": [', "not JSON (Expecting value: line 1 column 26 (char 25))"),
}


@pytest.mark.parametrize("case", sorted(TRANSPORT))
def test_a_damaged_transport_report_is_named_and_reread(case: str, results: Path, capsys):
    data, words = TRANSPORT[case]
    text = data if isinstance(data, str) else json.dumps(data)
    (results / RUN_DIR / "transport.json").write_text(text)
    got, _ = explained(results, capsys)
    line = checked(got, "transport")
    assert f"{RUN_DIR}/transport.json: {words}; the attempt's debug files read instead" in line
    assert "transport" not in kinds(got)  # the attempt has no debug file: no made-up item


TELEMETRY = {
    "E33": (truncate, "not a readable Parquet file"),
    "E34": (
        lambda p: pd.DataFrame({"x": [1]}).to_parquet(p),
        "no column node, device, metric, value",
    ),
}


@pytest.mark.parametrize("case", sorted(TELEMETRY))
def test_damaged_telemetry_falls_back_to_the_table_and_says_why(case: str, results: Path, capsys):
    damage, words = TELEMETRY[case]
    damage(results / RUN_DIR / "telemetry.parquet")
    got, _ = explained(results, capsys)
    assert f"per-GPU clocks not shown: {RUN_DIR}/telemetry.parquet: {words}" in checked(
        got, "telemetry"
    )
    (clocks,) = [i for i in got["items"] if i["kind"] == "telemetry"]
    assert "(lowest 1200.0 MHz)" in clocks["detail"]


NODES = {
    "E36": (
        lambda r: (r / "tables/nodes.parquet").write_bytes(b"PAR1" + b"x" * 96),
        "not a readable Parquet file",
    ),
    "E37": (
        lambda r: nodes_table(r, pd.DataFrame({"host": ["n1"], "status": ["ok"]})),
        "no column node",
    ),
}


@pytest.mark.parametrize("case", sorted(NODES))
def test_a_damaged_nodes_table_is_named(case: str, results: Path, capsys) -> None:
    damage, words = NODES[case]
    damage(results)
    got, _ = explained(results, capsys)
    assert checked(
        got, "node health"
    ) == f"node health: not checked: tables/nodes.parquet: {words}" or (
        words in checked(got, "node health")
    )


def test_e38_a_failed_node_without_its_reason_column(results: Path, capsys) -> None:
    nodes_table(results, pd.DataFrame({"node": ["n1"], "status": ["failed"]}))
    got, _ = explained(results, capsys)
    (item,) = [i for i in got["items"] if i["kind"] == "node_health"]
    assert item["title"] == "node n1 failed preflight" and item["detail"] == "no reason recorded"


STEPS = {
    "E41": (truncate, "not a readable Parquet file"),
    "E42": (
        lambda p: edit_table(p, lambda df: df.drop(columns=["in_window"])),
        "no column in_window",
    ),
}


@pytest.mark.parametrize("case", sorted(STEPS))
def test_a_damaged_steps_table_is_named(case: str, results: Path, capsys) -> None:
    damage, words = STEPS[case]
    damage(results / "tables/steps.parquet")
    got, _ = explained(results, capsys)
    line = checked(got, "step times")
    assert line.startswith("step times: not checked: tables/steps.parquet: ") and words in line


def test_e46_a_parity_difference_without_its_fields(results: Path, capsys) -> None:
    def change(record: dict) -> dict:
        spec = {**record["spec"], "framework": "nemo2"}
        spec["parity"] = {
            **spec["parity"],
            "differences": [{"name": "x"}, *spec["parity"]["differences"]],
        }
        return {**record, "spec": spec}

    edit_json(results / RUN_DIR / "run.json", change)
    got, _ = explained(results, capsys)
    assert "spec.parity.differences[0] not listed" in checked(got, "launch")
    titles = [i["title"] for i in got["items"]]
    assert "deliberate difference: srun --mpi=pmix" in titles  # the well-formed ones stay


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_e49_json_output_is_strict(value: float, results: Path, capsys) -> None:
    edit_table(results / "tables/runs.parquet", lambda df: df.assign(deviation_pct=value))
    code, out, _ = run_cli(["explain", RUN, "--results", str(results), "--format", "json"], capsys)
    (got,) = json.loads(out, parse_constant=_refuse)
    assert code == 0 and got["deviation_pct"] is None
    if value == float("inf"):  # E50: the text says what it is
        _, text, _ = run_cli(["explain", RUN, "--results", str(results)], capsys)
        assert text.startswith(f"{RUN}: verdict slower (+inf % against the reference)")


# --- FIFOs: refused without being opened, no hang (a process of their own) ---------------

FIFOS = {
    "E14": ("tables/runs.parquet", 2, "not a regular file but a named pipe"),
    "E25": (f"{RUN_DIR}/run.json", 0, "transport: not checked: "),
    "E30": (f"{RUN_DIR}/transport.json", 0, "transport.json: not a regular file but a named pipe"),
    "E35": (
        f"{RUN_DIR}/telemetry.parquet",
        0,
        "telemetry.parquet: not a regular file but a named pipe",
    ),
    "E40": ("tables/nodes.parquet", 0, "tables/nodes.parquet: not a regular file but a named pipe"),
    "E43": ("tables/steps.parquet", 0, "tables/steps.parquet: not a regular file but a named pipe"),
}


@pytest.mark.parametrize("case", sorted(FIFOS))
def test_a_fifo_is_refused_without_blocking(case: str, results: Path) -> None:
    relative, exit_code, words = FIFOS[case]
    fifo(results / relative)
    proc = subprocess.run(
        [sys.executable, "-m", "llmbench.cli", "explain", RUN, "--results", str(results)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == exit_code and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert words in (proc.stderr if exit_code else proc.stdout)


# --- the probe's GOOD cases stay GOOD ----------------------------------------------------


def test_e18_a_round_two_runs_table_is_explained(results: Path, capsys) -> None:
    """A runs table of an early layout (no verdict, transport or energy columns)."""
    early = ["run_id", "workload", "size", "dtype", "gpu_type", "gpus", "nodes",
             "global_batch_size", "status", "step_time_mean_s"]  # fmt: skip
    edit_table(results / "tables/runs.parquet", lambda df: df[early])
    code, out, err = run_cli(["explain", RUN, "--results", str(results)], capsys)
    assert code == 0 and err == "" and out.startswith(f"{RUN}: verdict none"), err


def test_good_cases_stay_good(results: Path, capsys) -> None:
    """E1, E3, E4, E8-E11, E20, E21, E26, E27, E31, E39: one line or explained."""
    base = ["explain", "--results", str(results)]
    code, _, err = run_cli([*base, "nope_run"], capsys)  # E1
    assert (
        code == 2 and f"'nope_run' is not in {results}/tables/runs.parquet; allowed: {RUN}" in err
    )
    for folder in ("nosuch", str(results / "tables/sweep.json")):  # E3, E4
        code, _, err = run_cli(["explain", RUN, "--results", folder], capsys)
        assert code == 2 and "does not exist; allowed: a results folder" in err
    code, out, _ = run_cli([*base, RUN, RUN, "--format", "json"], capsys)  # E8
    assert code == 0 and len(json.loads(out)) == 1
    for extra in (["--all"], ["--all", RUN]):  # E9, E10
        code, out, _ = run_cli([*base, *extra], capsys)
        assert code == 0 and out.startswith(f"{RUN}: verdict slower")
    (results / "tables/summary.json").write_text("{")  # E21 (explain does not read it)
    (results / RUN_DIR / "transport.json").write_text('{"attempt": 1, "files": [')  # E26
    got, _ = explained(results, capsys)
    assert checked(got, "transport").startswith("transport: NCCL's debug output, 0 file(s)")
    assert "launch" in kinds(got)
    (results / RUN_DIR / "transport.json").unlink()  # E31: re-read from the attempt
    got, _ = explained(results, capsys)
    assert checked(got, "transport").startswith("transport: NCCL's debug output, 0 file(s)")
    nodes_table(
        results,
        pd.DataFrame({"node": pd.Series([], dtype=str), "status": pd.Series([], dtype=str)}),
    )  # E39
    got, _ = explained(results, capsys)
    assert checked(got, "node health").startswith("node health: no preflight nodes table")
