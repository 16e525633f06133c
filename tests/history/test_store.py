"""The history store: Hive layout, atomic never-rewriting adds, listing, schema growth."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from llmbench.cli import main
from llmbench.errors import ConfigError
from llmbench.history.checked import CHECKSUM_FIELDS
from llmbench.history.read import SweepReader, read_table
from llmbench.history.store import add_sweep, open_history, sweep_index
from llmbench.history.sweep import (
    SCHEMA_VERSION,
    cluster_name,
    config_sha256,
    read_sweep,
    stage_hashes,
)
from tests.history.results import write_results

T1 = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
T2 = datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc)


def test_add_writes_hive_layout_with_schema_version(tmp_path: Path) -> None:
    record = write_results(tmp_path / "r1", "eos", T1)
    history = open_history(tmp_path / "h")
    added = add_sweep(history, tmp_path / "r1")
    folder = tmp_path / "h" / "cluster=eos" / "date=2026-03-01" / f"sweep={record['sweep_id']}"
    assert added.new and Path(added.path) == folder
    assert sorted(p.name for p in folder.iterdir()) == [
        "runs.parquet", "steps.parquet", "sweep.parquet",
    ]  # fmt: skip
    runs = pd.read_parquet(folder / "runs.parquet")
    source = pd.read_parquet(tmp_path / "r1" / "tables" / "runs.parquet")
    assert len(runs) == len(source) == 6
    assert (runs["schema_version"] == SCHEMA_VERSION).all()
    assert (runs["sweep_id"] == record["sweep_id"]).all()
    steps = pd.read_parquet(folder / "steps.parquet")
    assert len(steps) == 6 * 50 and (steps["sweep_id"] == record["sweep_id"]).all()
    sweep = pd.read_parquet(folder / "sweep.parquet").iloc[0]
    assert sweep["runs"] == 6 and sweep["steps"] == 300 and sweep["cluster"] == "eos"
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary left


def test_re_add_is_a_no_op_and_never_rewrites(tmp_path: Path) -> None:
    write_results(tmp_path / "r1", "eos", T1)
    history = open_history(tmp_path / "h")
    first = add_sweep(history, tmp_path / "r1")
    stamps = {p: p.stat().st_mtime_ns for p in Path(first.path).iterdir()}
    again = add_sweep(history, tmp_path / "r1")
    assert not again.new and again.path == first.path
    assert {p: p.stat().st_mtime_ns for p in Path(first.path).iterdir()} == stamps


def test_other_tables_under_a_stored_sweep_id_are_refused(tmp_path: Path) -> None:
    write_results(tmp_path / "r1", "eos", T1)
    history = open_history(tmp_path / "h")
    added = add_sweep(history, tmp_path / "r1")
    runs_file = Path(added.path) / "runs.parquet"
    before = runs_file.read_bytes()
    runs = pd.read_parquet(tmp_path / "r1" / "tables" / "runs.parquet")
    runs["step_time_mean_s"] *= 2
    runs.to_parquet(tmp_path / "r1" / "tables" / "runs.parquet", index=False)
    with pytest.raises(ConfigError, match="already in the history with other runs tables"):
        add_sweep(history, tmp_path / "r1")
    assert runs_file.read_bytes() == before


def test_a_half_written_sweep_is_completed(tmp_path: Path) -> None:
    """A writer that stopped after steps.parquet: the next add keeps that file and
    writes the rest; until then the sweep is not listed."""
    write_results(tmp_path / "r1", "eos", T1)
    history = open_history(tmp_path / "h")
    added = add_sweep(history, tmp_path / "r1")
    folder = Path(added.path)
    for name in ("runs.parquet", "sweep.parquet"):
        (folder / name).unlink()
    assert sweep_index(history).empty
    steps_stamp = (folder / "steps.parquet").stat().st_mtime_ns
    assert add_sweep(history, tmp_path / "r1").new
    assert (folder / "steps.parquet").stat().st_mtime_ns == steps_stamp
    assert len(sweep_index(history)) == 1


def test_index_lists_sweeps_oldest_first_across_clusters(tmp_path: Path) -> None:
    history = open_history(tmp_path / "h")
    r2 = write_results(tmp_path / "r2", "selene", T2)
    r1 = write_results(tmp_path / "r1", "eos", T1)
    for name in ("r2", "r1"):
        add_sweep(history, tmp_path / name)
    index = sweep_index(history)
    assert index["sweep_id"].tolist() == [r1["sweep_id"], r2["sweep_id"]]
    assert index["cluster"].tolist() == ["eos", "selene"]
    assert index["date"].tolist() == ["2026-03-01", "2026-03-02"]


def test_added_column_reads_as_null_in_older_sweeps(tmp_path: Path) -> None:
    history = open_history(tmp_path / "h")
    write_results(tmp_path / "old", "eos", T1)
    write_results(tmp_path / "new", "eos", T2, runs_hook=lambda runs: runs.assign(power_w=700.0))
    add_sweep(history, tmp_path / "old")
    add_sweep(history, tmp_path / "new")
    runs = read_table(history, sweep_index(history), "runs")
    assert "power_w" in runs.columns and len(runs) == 12
    by_date = runs.groupby("date")["power_w"]
    assert by_date.count().to_dict() == {"2026-03-01": 0, "2026-03-02": 6}
    picked = read_table(history, sweep_index(history), "runs", ["run_id", "power_w"])
    assert list(picked.columns) == ["run_id", "power_w", "cluster", "date", "sweep"]


def test_an_older_sweeps_release_spec_reads_back_as_dgxc_2025(tmp_path: Path) -> None:
    """A runs table an older llmbench stored names the default release ``spec`` (its
    former name): it reads back as dgxc-2025, beside a newer sweep's, other releases as
    they are; the stored file is not rewritten."""
    history = open_history(tmp_path / "h")
    releases = ["spec"] * 5 + ["v26.08"]
    write_results(tmp_path / "old", "eos", T1, runs_hook=lambda r: r.assign(release=releases))
    write_results(tmp_path / "new", "eos", T2)
    stored = Path(add_sweep(history, tmp_path / "old").path) / "runs.parquet"
    add_sweep(history, tmp_path / "new")
    for columns in (None, ["run_id", "release"]):
        runs = read_table(history, sweep_index(history), "runs", columns)
        by_date = runs.groupby("date")["release"].agg(lambda r: sorted(set(r))).to_dict()
        assert by_date == {"2026-03-01": ["dgxc-2025", "v26.08"], "2026-03-02": ["dgxc-2025"]}
    assert pq.read_table(stored, columns=["release"])["release"].to_pylist() == releases


def test_two_writers_of_different_sweeps_need_no_lock(tmp_path: Path) -> None:
    """Two processes adding at once: both sweeps complete, nothing else in the folders."""
    for i in range(2):
        write_results(tmp_path / f"r{i}", "eos", T1 if i == 0 else T2, seed=i)
    code = (
        "import sys; from llmbench.history.store import add_sweep, open_history; "
        "add_sweep(open_history(sys.argv[1]), sys.argv[2])"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "h"), str(tmp_path / f"r{i}")])
        for i in range(2)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    history = open_history(tmp_path / "h")
    assert len(sweep_index(history)) == 2
    names = {p.name for p in (tmp_path / "h").rglob("*") if p.is_file()}
    assert names == {"runs.parquet", "steps.parquet", "sweep.parquet"}


def _broken_record(results: Path) -> None:
    (results / "tables").mkdir(parents=True)
    (results / "tables" / "sweep.json").write_text("{")


@pytest.mark.parametrize(
    ("setup", "needle"),
    [
        (lambda p: None, "has no tables/ folder"),
        (lambda p: (p / "tables").mkdir(parents=True), "tables/sweep.json does not exist"),
        (
            lambda p: (
                (p / "tables").mkdir(parents=True),
                (p / "tables/sweep.json").write_text("{"),
            ),
            "not a sweep record",
        ),
    ],
)
def test_bad_results_folder_is_one_line(tmp_path: Path, setup, needle: str) -> None:
    results = tmp_path / "results"
    setup(results)
    with pytest.raises(ConfigError, match=needle) as err:
        add_sweep(open_history(tmp_path / "h"), results)
    assert "\n" not in str(err.value)


def test_sweep_record_fields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = write_results(tmp_path / "r", "eos", T1)
    assert record == read_sweep(tmp_path / "r" / "tables" / "sweep.json")
    assert record["sweep_id"].startswith("20260301T100000Z-")
    assert record["date"] == "2026-03-01" and record["schema_version"] == SCHEMA_VERSION
    assert len(record["python_env_sha256"]) == 64
    assert config_sha256({"steps": 50}) == config_sha256({"steps": 50, "history": {"a": 1}})
    assert config_sha256({"steps": 50}) != config_sha256({"steps": 51})
    with pytest.raises(ConfigError, match=r"history\.cluster: 'a/b' is not a usable name"):
        cluster_name("a/b")
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol: the host name
    assert cluster_name(None) and "/" not in cluster_name(None)


def test_cluster_from_slurm_scontrol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slurm's ClusterName as `scontrol show config` prints it (a stand-in script that
    prints the real command's line format)."""
    script = tmp_path / "scontrol"
    script.write_text(
        "#!/bin/sh\necho 'Configuration data as of 2026-03-01T10:00:00'\n"
        "echo 'AccountingStorageType   = (null)'\necho 'ClusterName             = eos'\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert cluster_name(None) == "eos"
    assert cluster_name("selene") == "selene"


def test_history_location_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        sweep_index(open_history(tmp_path / "file"))
    with pytest.raises(ConfigError, match="cannot be opened"):
        open_history("nosuchscheme://bucket/x")
    assert sweep_index(open_history(tmp_path / "missing")).empty
    assert json.dumps(list(sweep_index(open_history(tmp_path / "missing")).columns)) == (
        '["cluster", "date", "sweep_id"]'
    )


def test_a_record_field_null_in_one_sweep_and_set_in_another(tmp_path: Path) -> None:
    """The first sweep ran without a venv (null hash), the next with one: both read."""
    history = open_history(tmp_path / "h")
    for i, (when, venv) in enumerate(((T1, None), (T2, "ab" * 32))):
        record = write_results(tmp_path / f"r{i}", "eos", when, seed=i)
        record["venv_freeze_sha256"] = venv
        (tmp_path / f"r{i}" / "tables" / "sweep.json").write_text(json.dumps(record))
        add_sweep(history, tmp_path / f"r{i}")
    sweeps = read_table(history, sweep_index(history), "sweep", ["sweep_id", "venv_freeze_sha256"])
    assert sweeps["venv_freeze_sha256"].tolist()[1] == "ab" * 32
    assert pd.isna(sweeps["venv_freeze_sha256"].tolist()[0])


def test_stage_hashes_of_venv_and_images(tmp_path: Path) -> None:
    stage = tmp_path / "stage"
    assert stage_hashes(stage) == (None, {})
    (stage / "venv").mkdir(parents=True)
    (stage / "venv" / "llmbench-venv.txt").write_text("# Python 3.11\ntorch==2.13.0\n")
    (stage / "images").mkdir()
    image = stage / "images" / "nvidia+nemo+25.09.sqsh"
    image.write_bytes(b"hsqs" + bytes(1000))
    venv, images = stage_hashes(stage)
    assert venv == hashlib.sha256(b"# Python 3.11\ntorch==2.13.0\n").hexdigest()
    assert images == {image.name: hashlib.sha256(image.read_bytes()).hexdigest()}
    cache = stage / "images" / f".{image.name}.sha256"
    assert cache.read_text().split("\n")[1] == images[image.name]  # not hashed again
    image.write_bytes(b"hsqs" + bytes(2000))  # a new import: size and time change
    assert stage_hashes(stage)[1][image.name] == hashlib.sha256(image.read_bytes()).hexdigest()


def test_a_sweep_stored_without_checksums_reads_unchecked(tmp_path: Path, capsys) -> None:
    """A record as llmbench wrote it before it stored checksums: still read, and said
    to be unchecked by list and compare."""
    history = open_history(tmp_path / "h")
    ids = []
    for i, when in enumerate((T1, T2)):
        ids.append(write_results(tmp_path / f"r{i}", "eos", when, seed=i)["sweep_id"])
        added = add_sweep(history, tmp_path / f"r{i}")
    record = Path(added.path) / "sweep.parquet"  # the newer sweep's
    old = pq.read_table(record).drop_columns(list(CHECKSUM_FIELDS))
    pq.write_table(old, record)
    assert main(["history", "list", "--history", str(tmp_path / "h"), "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(s["sweep_id"], s["checked"]) for s in listed] == [(ids[0], "sha256"), (ids[1], "no")]
    assert main(["compare", ids[0], ids[1], "--history", str(tmp_path / "h")]) == 0
    out = capsys.readouterr()
    assert f"read unchecked (stored without checksums): {ids[1]}" in out.out and out.err == ""


def test_a_record_whose_fields_changed_is_damaged(tmp_path: Path) -> None:
    """A record that still reads as Parquet but holds other values (a row count, a
    checksum) than it was sealed with is left out, never trusted."""
    write_results(tmp_path / "r", "eos", T1)
    history = open_history(tmp_path / "h")
    added = add_sweep(history, tmp_path / "r")
    record = Path(added.path) / "sweep.parquet"
    table = pq.read_table(record)
    pq.write_table(table.set_column(table.schema.get_field_index("runs"), "runs",
                                    pa.array([7], pa.int64())), record)  # fmt: skip
    reader = SweepReader(history)
    assert reader.read(sweep_index(history), "runs").empty
    assert "do not match its record_sha256" in next(iter(reader.skipped.values())).line()
    with pytest.raises(ConfigError, match="record_sha256"):
        read_table(history, sweep_index(history), "runs")


def test_writes_never_leave_the_history_through_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "cluster=eos").symlink_to(outside)
    write_results(tmp_path / "r", "eos", T1)
    with pytest.raises(ConfigError, match="leads outside the history"):
        add_sweep(open_history(tmp_path / "h"), tmp_path / "r")
    assert list(outside.iterdir()) == []
