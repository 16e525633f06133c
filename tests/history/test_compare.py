"""``compare`` on histories of synthetic sweeps: verdicts, selectors, provenance, output."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmbench.cli import main
from llmbench.errors import ConfigError
from llmbench.history.compare import compare
from llmbench.history.select import parse_selector
from llmbench.history.store import add_sweep, open_history
from tests.history.results import write_results

SLOW_RUN = "llama3.1-nemo_8b_fp8_h100x16_perf"


def day(d: int, hour: int = 10) -> datetime:
    return datetime(2026, 3, d, hour, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """eos: 3 sweeps on March 1-3 (the third with one run 20 % slower on another host);
    selene: 2 sweeps on March 2."""
    root = tmp_path_factory.mktemp("history")
    records = []
    for i, (cluster, when, factor, host) in enumerate([
        ("eos", day(1), lambda r: 1.0, "node1"),
        ("eos", day(2), lambda r: 1.0, "node1"),
        ("eos", day(3), lambda r: 1.2 if r == SLOW_RUN else 1.0, "node7"),
        ("selene", day(2, 11), lambda r: 1.0, "s1"),
        ("selene", day(2, 12), lambda r: 1.0, "s1"),
    ]):  # fmt: skip
        results = root / f"results{i}"
        records.append(write_results(results, cluster, when, factor, seed=i, host=host))
        add_sweep(open_history(root / "h"), results)
    return root / "h", records


def test_one_slowed_key_is_flagged_slower_and_no_other(history) -> None:
    path, records = history
    result = compare(open_history(path), records[1]["sweep_id"], records[2]["sweep_id"])
    keys = result.keys.assign(run=lambda f: f.workload + "_" + f["size"] + "_" + f.dtype)
    slow = (keys.dtype == "fp8") & (keys.gpus == 16)
    assert keys.loc[slow, "verdict"].tolist() == ["slower"]
    assert set(keys.loc[~slow, "verdict"]) == {"same"}
    assert keys.loc[slow, "ratio"].iloc[0] == pytest.approx(1.2, rel=0.02)
    assert keys.loc[slow, "ci_low"].iloc[0] > 1.05
    assert result.regressions == 1
    assert set(keys["changed"]) == {"host"}
    changed = {c["field"]: c for c in result.provenance}
    assert changed["host"] == {"field": "host", "a": ["node1"], "b": ["node7"]}


def test_identical_conditions_are_same(history) -> None:
    path, records = history
    result = compare(open_history(path), records[0]["sweep_id"], records[1]["sweep_id"])
    assert set(result.keys["verdict"]) == {"same"} and result.regressions == 0
    assert result.provenance == []


def test_selectors_cluster_date_latest(history) -> None:
    path, _ = history
    store = open_history(path)
    both = compare(store, "cluster=eos,date=2026-03-01..2026-03-02", "cluster=selene")
    assert (both.keys["runs_a"] == 2).all() and (both.keys["runs_b"] == 2).all()
    assert set(both.keys["verdict"]) == {"same"}
    assert {c["field"] for c in both.provenance} >= {"cluster", "host"}
    latest = compare(store, "cluster=eos,latest~1", "cluster=eos,latest")
    assert latest.regressions == 1
    assert latest.a == "cluster=eos,latest~1"


def test_sweep_against_published(history) -> None:
    path, records = history
    result = compare(open_history(path), "published", records[0]["sweep_id"])
    assert len(result.keys) == 6 and (result.keys["runs_a"] == 0).all()
    bf16_8 = result.keys[(result.keys.dtype == "bf16") & (result.keys.gpus == 8)].iloc[0]
    assert bf16_8["step_time_a_s"] == 12.27  # the published table's value
    assert bf16_8["step_time_b_s"] == pytest.approx(12.0 * 1.06, rel=0.02)  # sweep_tables


def test_a_run_tabulated_again_counts_once(tmp_path: Path) -> None:
    """Two sweeps holding the same run attempts (tables rebuilt without rerunning)."""
    history = open_history(tmp_path / "h")

    def same_attempts(runs: pd.DataFrame) -> pd.DataFrame:
        return runs.assign(started_at=pd.Timestamp(day(1)))

    for i, when in enumerate((day(1), day(1, 12))):
        write_results(tmp_path / f"r{i}", "eos", when, seed=5, runs_hook=same_attempts)
        add_sweep(history, tmp_path / f"r{i}")
    result = compare(history, "cluster=eos", "published")
    assert (result.keys["runs_a"] == 1).all()


@pytest.mark.parametrize(
    ("a", "needle"),
    [
        ("20200101T000000Z-abcdef", "sweep '20200101T000000Z-abcdef' is not in the history"),
        ("nonsense", "'nonsense' is not a sweep id; allowed: an id such as"),
        ("date=2026-02-30", "'2026-02-30' is not a date; allowed: YYYY-MM-DD"),
        ("date=2026-03-05..2026-03-01", "ends before it starts"),
        ("date=2025-01-01..2025-01-31", "no sweep from 2025-01-01 to 2025-01-31; allowed: dates"),
        ("cluster=nowhere", "cluster 'nowhere' has no sweeps in the history; allowed: eos, selene"),
        ("colour=red", "unknown selector key 'colour'; allowed: published"),
        ("cluster=eos,latest~9", "goes back 9 sweeps but only 3 match"),
    ],
)
def test_bad_selectors_are_one_line(history, capsys, a: str, needle: str) -> None:
    path, _ = history
    rc = main(["compare", a, "latest", "--history", str(path)])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_empty_history_and_no_history(tmp_path: Path, capsys) -> None:
    assert main(["compare", "latest", "published", "--history", str(tmp_path / "none")]) == 2
    assert "holds no sweeps; allowed: add one with" in capsys.readouterr().err
    missing_config = str(tmp_path / "config.yaml")
    assert main(["compare", "latest", "published", "--config", missing_config]) == 2
    assert "no history given; allowed: --history" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="both sides are the published references"):
        compare(None, "published", "published")
    assert parse_selector("published").published


def test_cli_formats_and_exit_code(history, tmp_path: Path, capsys) -> None:
    path, records = history
    a, b = records[1]["sweep_id"], records[2]["sweep_id"]
    args = ["compare", a, b, "--history", str(path)]
    assert main([*args, "--format", "json"]) == 1  # a regression: non-zero for CI gates
    data = json.loads(capsys.readouterr().out)
    assert data["regressions"] == 1 and len(data["keys"]) == 6
    assert [k["verdict"] for k in data["keys"] if k["gpus"] == 16 and k["dtype"] == "fp8"] == [
        "slower"
    ]
    assert main([*args, "--format", "csv", "--output", str(tmp_path / "c.csv")]) == 1
    csv = pd.read_csv(tmp_path / "c.csv")
    assert len(csv) == 6 and "ci_low" in csv.columns
    assert main([*args, "--format", "html", "--output", str(tmp_path / "c.html")]) == 1
    page = (tmp_path / "c.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "slower" in page and "node7" in page
    assert main([*args, "--format", "html", "--output", str(tmp_path / "c.html")]) == 2
    assert "exists; allowed: a new file name" in capsys.readouterr().err
    assert main([*args, "--tolerance", "0.5"]) == 0  # 20 % is within a 50 % tolerance
    table = capsys.readouterr().out
    assert "provenance changed:" in table and "host: node1 -> node7" in table
    assert main(["compare", records[0]["sweep_id"], records[1]["sweep_id"], "--history",
                 str(path)]) == 0  # fmt: skip


def test_history_list_and_add_cli(history, tmp_path: Path, capsys) -> None:
    path, records = history
    assert main(["history", "list", "--history", str(path), "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [s["sweep_id"] for s in listed] == sorted(r["sweep_id"] for r in records)
    assert main(["history", "list", "cluster=selene", "--history", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 sweeps in" in out and "eos" not in out
    write_results(tmp_path / "r", "eos", day(9))
    assert main(["history", "add", str(tmp_path / "r"), "--history", str(tmp_path / "h2")]) == 0
    assert "added to" in capsys.readouterr().out
    assert main(["history", "add", str(tmp_path / "r"), "--history", str(tmp_path / "h2")]) == 0
    assert "already in" in capsys.readouterr().out


def test_run_to_run_spread_in_the_history_prevents_false_alarms(tmp_path: Path) -> None:
    """Eight sweeps whose runs differ by ~8 % from sweep to sweep (a machine's run-to-run
    variation): two of them 15 % apart are not called slower, while a real 2x slowdown is."""
    history = open_history(tmp_path / "h")
    rng = np.random.default_rng(11)
    factors = [*np.exp(rng.normal(0, 0.08, 6)), 1.0, 1.15]
    ids = []
    for i, f in enumerate(factors):
        record = write_results(tmp_path / f"r{i}", "eos", day(1 + i), lambda r, f=f: f, seed=i)
        add_sweep(history, tmp_path / f"r{i}")
        ids.append(record["sweep_id"])
    drift = compare(history, ids[6], ids[7])
    assert (drift.keys["run_spread_pct"] > 3).all()
    assert "slower" not in set(drift.keys["verdict"]), drift.keys
    write_results(tmp_path / "slow", "eos", day(20), lambda r: 2.0, seed=99)
    add_sweep(history, tmp_path / "slow")
    slow = compare(history, ids[6], "latest")
    assert set(slow.keys["verdict"]) == {"slower"}


def test_keys_without_a_published_step_time_are_named(tmp_path: Path, capsys) -> None:
    """Runs at GPU counts the published tables do not have: compared with ``published``,
    they are insufficient data, and the output says that no published value exists."""
    write_results(tmp_path / "r", "eos", day(1), runs_hook=lambda r: r.assign(gpus=r.gpus * 3))
    add_sweep(open_history(tmp_path / "h"), tmp_path / "r")
    args = ["compare", "published", "latest", "--history", str(tmp_path / "h")]
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {k["verdict"] for k in data["keys"]} == {"insufficient data"}
    assert "llama3.1-nemo 8b bf16 h100 24 weak perf" in data["unpublished"]
    assert len(data["unpublished"]) == 6
    assert main(args) == 0
    assert "no published step time for: llama3.1-nemo 8b bf16 h100 24" in capsys.readouterr().out


def test_results_folders_compare_without_a_history(history, tmp_path: Path, capsys) -> None:
    """Issue 44: a results folder is a side; with two, no history is needed, and a folder
    and a history's sweep compare too. Nothing is written into the history."""
    path, records = history
    root = path.parent
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    rc = main(["compare", str(root / "results1"), str(root / "results2"), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1  # the same slowed key as between the two stored sweeps
    slow = [k for k in out["keys"] if k["verdict"] == "slower"]
    assert [(k["dtype"], k["gpus"]) for k in slow] == [("fp8", 16)]
    assert out["a"] == str(root / "results1")
    mixed = compare(open_history(path), records[1]["sweep_id"], str(root / "results2"))
    assert mixed.regressions == 1
    assert compare(None, "published", str(root / "results0")).keys["runs_b"].gt(0).all()
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before


def test_a_folder_that_is_not_a_sweep_is_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "results" / "tables").mkdir(parents=True)
    assert main(["compare", str(tmp_path / "results"), "published"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sweep.json" in err and "Traceback" not in err
