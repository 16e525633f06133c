"""The third bad-input probe's history, compare and archive cases (B1-B4): every bad
stored file, record, location or output gives one line and the right exit status,
writes nothing where it should not, never hangs, and never becomes a number.

Each case starts from a history of two synthetic sweeps (the real table and sweep-record
code, ``tests.history.results``) added by the real ``history add``. Cases that could hang
(a named pipe) or need another mount (a read-only history) run ``llmbench`` as a process;
the object store cases use pyarrow's real S3 client (against a closed local port, or
refused before it connects)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import zstandard

from tests.bad_inputs.checks import assert_untouched, one_error_line, run_cli
from tests.history.results import write_results
from tests.history.test_archive import members

TOKEN = "hf_" + "Zq7Xw2Vb9Nm4Lk8Jh3Gf6Ds1Ap5Oi0Uy"
PASSWORD = "s3cr3t-pw-4711"


def _when(day: int) -> datetime:
    return datetime(2026, 11, day, 8, 28, tzinfo=timezone.utc)


def files_under(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture
def hist(sandbox: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, list[dict]]:
    """``hist/`` with two sweeps of one cluster, a day apart, from ``r1/`` and ``r2/``."""
    records = []
    for i in (1, 2):
        records.append(write_results(sandbox / f"r{i}", "vm", _when(20 + i), seed=i))
        code, _, err = run_cli(["history", "add", f"r{i}", "--history", "hist"], capsys)
        assert code == 0, err
    return sandbox / "hist", records


def name(record: dict, table: str) -> str:
    """A stored file as messages name it: inside the history."""
    return f"cluster=vm/date={record['date']}/sweep={record['sweep_id']}/{table}.parquet"


def stored(hist: Path, record: dict, table: str) -> Path:
    return hist / name(record, table)


def llmbench(*args: str, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess[str]:
    """``llmbench`` as its own process: a hang fails the test instead of stopping it."""
    return subprocess.run(
        [sys.executable, "-m", "llmbench.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=dict(os.environ), **kwargs,
    )  # fmt: skip


def set_record(results: Path, **fields) -> None:
    path = results / "tables" / "sweep.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


# --- B1: history add / list -------------------------------------------------------------


def test_h6_a_date_that_leaves_the_history_is_refused(sandbox: Path, capsys) -> None:
    write_results(sandbox / "r1", "vm", _when(26))
    set_record(sandbox / "r1", date="../../../../escaped")
    code, out, err = run_cli(["history", "add", "r1", "--history", "hist-h6/deep"], capsys)
    assert code == 2 and out == ""
    one_error_line(err, "sweep.json", "date", "'../../../../escaped'", "YYYY-MM-DD")
    assert not (sandbox / "hist-h6").exists()
    assert not list(sandbox.parent.rglob("escaped")), "written outside the history"
    assert_untouched(sandbox)


@pytest.mark.parametrize(
    ("field", "value", "needles"),
    [
        ("schema_version", "one", ("schema_version", "'one'", "whole number")),  # H7
        ("schema_version", 99, ("schema_version", "99", "from 1 to")),
        ("schema_version", True, ("schema_version", "True")),
        ("created_at", "yesterday", ("created_at", "'yesterday'", "ISO 8601")),
        ("date", "2026-11-31", ("date", "'2026-11-31'", "YYYY-MM-DD")),
        ("date", "2026-11-27", ("date", "'2026-11-27'", "UTC day")),
        ("config_sha256", "abc", ("config_sha256", "'abc'", "64 lowercase hex")),
        ("venv_freeze_sha256", 5, ("venv_freeze_sha256", "or null")),
        ("images", ["x.sqsh"], ("images", "mapping")),
        ("images", {"x.sqsh": "nope"}, ("images['x.sqsh']", "'nope'")),
        ("llmbench_version", "", ("llmbench_version", "printable text")),
        ("git_sha", "a\nb", ("git_sha", "printable text")),
        ("cluster", "vm\n", ("cluster", "not a usable name")),
        ("sweep_id", "20261126T082800Z-abcdef\n", ("sweep_id", "not a sweep id")),
    ],
)
def test_h7_every_record_field_is_checked(sandbox: Path, capsys, field, value, needles) -> None:
    write_results(sandbox / "r1", "vm", _when(26))
    set_record(sandbox / "r1", **{field: value})
    code, out, err = run_cli(["history", "add", "r1", "--history", "hist"], capsys)
    assert code == 2 and out == ""
    one_error_line(err, "sweep.json", *needles)
    assert not (sandbox / "hist").exists()


@pytest.mark.parametrize("table", ["runs", "steps"])
def test_h9_a_truncated_results_table_is_one_line(sandbox: Path, capsys, table: str) -> None:
    write_results(sandbox / "r1", "vm", _when(26))
    path = sandbox / "r1" / "tables" / f"{table}.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    code, out, err = run_cli(["history", "add", "r1", "--history", "hist"], capsys)
    assert code == 2 and out == ""
    one_error_line(err, f"{table}.parquet", "not a readable Parquet file")
    assert not (sandbox / "hist").exists()


def test_h12_list_leaves_out_a_damaged_record_and_says_so(hist, capsys) -> None:
    path, records = hist
    damaged = stored(path, records[0], "sweep")
    damaged.write_bytes(damaged.read_bytes()[:15])
    code, out, err = run_cli(
        ["history", "list", "--history", str(path), "--format", "json"], capsys
    )
    assert code == 1
    assert [s["sweep_id"] for s in json.loads(out)] == [records[1]["sweep_id"]]
    one_error_line(err, "llmbench history: warning:", name(records[0], "sweep"), "Parquet")


def test_h16_add_never_seals_a_damaged_half_written_sweep(hist, capsys) -> None:
    """A crash left the sweep's steps.parquet truncated and no record: adding again
    must not complete the sweep around the damaged file."""
    path, records = hist
    steps = stored(path, records[1], "steps")
    for table in ("runs", "sweep"):
        stored(path, records[1], table).unlink()
    steps.write_bytes(steps.read_bytes()[:300])
    before = files_under(path)
    code, out, err = run_cli(["history", "add", "r2", "--history", str(path)], capsys)
    assert code == 2 and out == ""
    one_error_line(err, name(records[1], "steps"), "half-way", "remove the unlisted folder")
    assert files_under(path) == before
    code, out, _ = run_cli(["history", "list", "--history", str(path), "--format", "json"], capsys)
    assert code == 0 and [s["sweep_id"] for s in json.loads(out)] == [records[0]["sweep_id"]]


def test_h16_a_half_written_sweep_of_the_same_tables_is_completed(hist, capsys) -> None:
    path, records = hist
    for table in ("runs", "sweep"):
        stored(path, records[1], table).unlink()
    code, out, err = run_cli(["history", "add", "r2", "--history", str(path)], capsys)
    assert code == 0 and "added to" in out, err
    code, out, _ = run_cli(["compare", "latest~1", "latest", "--history", str(path)], capsys)
    assert code in (0, 1) and "6 keys" in out


def test_h17_a_named_pipe_record_is_refused_without_waiting(sandbox: Path) -> None:
    write_results(sandbox / "r1", "vm", _when(26))
    record = sandbox / "r1" / "tables" / "sweep.json"
    record.unlink()
    os.mkfifo(record)
    proc = llmbench("history", "add", "r1", "--history", "hist", cwd=sandbox)
    assert proc.returncode == 2 and proc.stdout == ""
    one_error_line(proc.stderr, "sweep.json", "not a regular file but a named pipe")
    assert not (sandbox / "hist").exists()


def _read_only(folder: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    """``llmbench args`` with ``folder`` read-only: the modes of its folders for a user,
    a read-only bind mount in a mount namespace of its own for root (who may write
    anything else)."""
    if os.geteuid() != 0:
        folders = [folder, *(p for p in folder.rglob("*") if p.is_dir())]
        for each in folders:
            each.chmod(0o555)
        try:
            return llmbench(*args)
        finally:
            for each in folders:
                each.chmod(0o755)
    if shutil.which("unshare") is None:
        pytest.skip("root without unshare: no way to make a folder read-only")
    script = (
        f'mount --bind "{folder}" "{folder}" && mount -o remount,ro,bind "{folder}" && '
        f'exec "{sys.executable}" -m llmbench.cli "$@"'
    )
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", *args],
        capture_output=True, text=True, timeout=120, env=dict(os.environ),
    )  # fmt: skip
    if "mount:" in proc.stderr or "unshare:" in proc.stderr:
        pytest.skip(f"no read-only bind mount here: {proc.stderr.strip()[:200]}")
    return proc


def test_h18_a_read_only_history_is_one_line(hist, sandbox: Path) -> None:
    path, _ = hist
    write_results(sandbox / "r3", "vm", _when(26), seed=3)
    before = files_under(path)
    proc = _read_only(path, ["history", "add", str(sandbox / "r3"), "--history", str(path)])
    assert proc.returncode == 2 and proc.stdout == ""
    one_error_line(proc.stderr, "cannot write cluster=vm/date=2026-11-26/", "this user can write")
    assert files_under(path) == before
    listed = _read_only(path, ["history", "list", "--history", str(path)])
    assert listed.returncode == 0 and "2 sweeps in" in listed.stdout


# --- B2: compare ------------------------------------------------------------------------


def test_cm16_output_into_a_missing_folder(hist, sandbox: Path, capsys) -> None:
    path, _ = hist
    args = ["compare", "latest~1", "latest", "--history", str(path)]
    code, out, err = run_cli([*args, "--output", "no/such/dir/cmp.html"], capsys)
    assert code == 2 and out == ""
    one_error_line(err, "--output", "'no/such/dir'", "does not exist")
    assert not (sandbox / "no").exists()


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _flip_one_bit(path: Path) -> None:
    """One bit in the middle of the step time column's first page: Parquet as pandas
    writes it has no page checksum, so the decoder reads another number."""
    meta = pq.ParquetFile(path).metadata.row_group(0)
    column = next(
        meta.column(i) for i in range(meta.num_columns)
        if meta.column(i).path_in_schema in ("step_time_s", "step_time_mean_s")
    )  # fmt: skip
    start = column.dictionary_page_offset or column.data_page_offset
    data = bytearray(path.read_bytes())
    data[start + column.total_compressed_size // 2] ^= 0x04
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("table", "damage", "needle"),
    [
        ("steps", _truncate, "sha256"),  # CM18
        ("sweep", _empty, "not a readable Parquet file"),  # CM19
        ("steps", _flip_one_bit, "sha256"),  # CM31
        ("runs", _truncate, "sha256"),
    ],
    ids=["CM18-truncated-steps", "CM19-empty-record", "CM31-one-bit", "truncated-runs"],
)
def test_cm18_cm19_cm31_a_damaged_side_is_never_read(hist, capsys, table, damage, needle) -> None:
    path, records = hist
    damaged = stored(path, records[0], table)
    damage(damaged)
    args = ["compare", "latest~1", "latest", "--history", str(path)]
    code, out, err = run_cli(args, capsys)
    assert code == 2 and out == ""
    one_error_line(err, "'latest~1'", "is damaged", name(records[0], table), needle)


def test_a_damaged_sweep_outside_both_sides_is_left_out_and_named(hist, sandbox, capsys) -> None:
    """A third sweep: the damaged first one only feeds the run-to-run spread."""
    path, records = hist
    write_results(sandbox / "r3", "vm", _when(26), seed=3)
    assert run_cli(["history", "add", "r3", "--history", str(path)], capsys)[0] == 0
    damaged = stored(path, records[0], "runs")
    _flip_one_bit(damaged)
    args = ["compare", "latest~1", "latest", "--history", str(path), "--format", "json"]
    code, out, err = run_cli(args, capsys)
    assert code in (0, 1)
    one_error_line(err, "llmbench compare: warning:", name(records[0], "runs"), "sha256")
    assert json.loads(out)["skipped"] == [err.strip().split("warning: ", 1)[1]]


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("url", "needles"),
    [
        ("s3://", ("'s3://'", "names no bucket")),  # CM21
        ("s3://bucket/p?region=", ("option 'region' has no value",)),  # CM23
        ("gs://", ("'gs://'", "names no bucket")),
        (f"s3://user:{PASSWORD}@bkt/p?region=us-east-1", ("holds credentials",)),  # CM27
    ],
    ids=["CM21-no-bucket", "CM23-empty-region", "gs-no-bucket", "CM27-credentials"],
)
def test_cm21_cm23_cm27_malformed_store_urls(sandbox: Path, capsys, url: str, needles) -> None:
    code, out, err = run_cli(["compare", "latest~1", "latest", "--history", url], capsys)
    assert code == 2 and out == ""
    one_error_line(err, *needles)
    assert PASSWORD not in err
    assert_untouched(sandbox)


@pytest.mark.parametrize("command", ["compare", "list", "add"])
def test_cm26_an_unreachable_store_is_one_line(sandbox: Path, capsys, monkeypatch, command) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "stand-in")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", PASSWORD)
    url = f"s3://bkt/p?region=us-east-1&endpoint_override=127.0.0.1:{_unused_port()}&scheme=http"
    write_results(sandbox / "r1", "vm", _when(26))
    argv = {
        "compare": ["compare", "latest~1", "latest", "--history", url],
        "list": ["history", "list", "--history", url],
        "add": ["history", "add", "r1", "--history", url],
    }[command]
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == ""
    one_error_line(err, "cannot be read", "127.0.0.1", "a store that answers")
    assert PASSWORD not in err


# --- B3: archive ------------------------------------------------------------------------


def test_ar4_output_into_a_missing_folder(hist, sandbox: Path, capsys) -> None:
    code, out, err = run_cli(["archive", "r1", "-o", "no/such/dir/x.tar.zst"], capsys)
    assert code == 2 and out == ""
    one_error_line(err, "archive", "'no/such/dir'", "does not exist")
    assert not (sandbox / "no").exists()


def test_ar7_what_archive_writes_verify_accepts(hist, sandbox: Path, capsys) -> None:
    odd = sandbox / "r1" / "runs" / "odd\\name.log"
    odd.parent.mkdir(parents=True)
    odd.write_text("a log\n")
    code, out, err = run_cli(["archive", "r1", "-o", "ar7.tar.zst"], capsys)
    assert code == 0 and "left out: 1 name" in out, err
    manifest = next(v for k, v in members(sandbox / "ar7.tar.zst").items()
                    if k.endswith("MANIFEST.json"))  # fmt: skip
    assert json.loads(manifest)["left_out"]["name"] == ["runs/odd\\name.log"]
    code, out, err = run_cli(["archive", "--verify", "ar7.tar.zst"], capsys)
    assert code == 0 and "members verified" in out, err


def test_ar10_a_nul_byte_does_not_stop_redaction(hist, sandbox: Path, capsys) -> None:
    log = sandbox / "r1" / "runs" / "r" / "attempt-1" / "train.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"\0" + b"step 1 | train_step_timing in s: 1.0\n" * 100
                    + f"HF_TOKEN={TOKEN}\n".encode())  # fmt: skip
    code, _, err = run_cli(["archive", "r1", "-o", "ar10.tar.zst"], capsys)
    assert code == 0, err
    got = members(sandbox / "ar10.tar.zst")
    assert TOKEN.encode() not in b"".join(got.values())
    kept = next(v for k, v in got.items() if k.endswith("train.log"))
    assert kept.startswith(b"\0step 1") and kept.endswith(b"HF_TOKEN=<redacted>\n")


def test_ar12_a_named_pipe_record_is_refused_without_waiting(sandbox: Path) -> None:
    write_results(sandbox / "r1", "vm", _when(26))
    record = sandbox / "r1" / "tables" / "sweep.json"
    record.unlink()
    os.mkfifo(record)
    proc = llmbench("archive", "r1", "-o", "ar12.tar.zst", cwd=sandbox)
    assert proc.returncode == 2 and proc.stdout == ""
    one_error_line(proc.stderr, "sweep.json", "not a regular file but a named pipe")
    assert not (sandbox / "ar12.tar.zst").exists()


def test_ar6_links_and_pipes_are_left_out_and_said(hist, sandbox: Path, capsys) -> None:
    outside = sandbox / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not for the archive\n")
    (sandbox / "r1" / "file-link").symlink_to(outside / "secret.txt")
    (sandbox / "r1" / "dir-link").symlink_to(outside)
    os.mkfifo(sandbox / "r1" / "pipe")
    proc = llmbench("archive", "r1", "-o", "ar6.tar.zst", cwd=sandbox)
    assert proc.returncode == 0 and "left out: 2 link, 1 special" in proc.stdout, proc.stderr
    got = members(sandbox / "ar6.tar.zst")
    assert b"not for the archive" not in b"".join(got.values())
    assert llmbench("archive", "--verify", "ar6.tar.zst", cwd=sandbox).returncode == 0


# --- B4: archive --verify ---------------------------------------------------------------


def test_av13_av17_verify_says_what_the_path_is(sandbox: Path, capsys) -> None:
    (sandbox / "good").mkdir()
    os.mkfifo(sandbox / "AV17.tar.zst")
    for path, needle in (("good", "a folder"), ("AV17.tar.zst", "a named pipe")):
        code, out, err = run_cli(["archive", "--verify", path], capsys)
        assert code == 2 and out == ""
        one_error_line(err, f"'{path}'", f"not a regular file but {needle}")


def test_verify_refuses_names_by_the_rule_archive_applies(hist, sandbox: Path, capsys) -> None:
    """A tampered archive with a member archive would never write: refused by name."""
    assert run_cli(["archive", "r1", "-o", "good.tar.zst"], capsys)[0] == 0
    got = members(sandbox / "good.tar.zst")
    with (
        open(sandbox / "bad.tar.zst", "wb") as raw,
        zstandard.ZstdCompressor().stream_writer(raw) as zst,
        tarfile.open(fileobj=zst, mode="w|") as tar,
    ):
        for name, data in [("x/odd\\name.log", b"x"), *got.items()]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    code, _, err = run_cli(["archive", "--verify", "bad.tar.zst"], capsys)
    assert code == 2
    one_error_line(err, "'x/odd\\\\name.log'", "a backslash")


# --- the GOOD cases of B1-B4 stay GOOD ----------------------------------------------------


GOOD: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("H1", ["history", "add", "r1"], ("no history given",)),
    ("H2", ["history", "add", "hist", "--history", "h2"], ("has no tables/ folder",)),
    ("H11", ["history", "list", "--history", "r1/tables/sweep.json"], ("is a file",)),
    ("H13", ["history", "list", "--history", "no-such-history"], ("holds no sweeps",)),
    ("H14", ["history", "list", "date=2026-13-45", "--history", "hist"], ("is not a date",)),
    ("H15", ["history", "list", "cluster=", "--history", "hist"], ("given twice or empty",)),
    ("CM1", ["compare", "20200101T000000Z-abcdef", "latest", "--history", "hist"],
     ("is not in the history",)),
    ("CM4", ["compare", "published", "published", "--history", "hist"], ("both sides",)),
    ("CM5", ["compare", "date=2026-11-30..2026-11-01", "latest", "--history", "hist"],
     ("ends before it starts",)),
    ("CM6", ["compare", "date=2026-02-30", "latest", "--history", "hist"], ("is not a date",)),
    ("CM7", ["compare", "date=2020-01-01..2020-01-31", "latest", "--history", "hist"],
     ("no sweep from",)),
    ("CM8", ["compare", "latest~99", "latest", "--history", "hist"], ("goes back 99",)),
    ("CM9", ["compare", "latest~-1", "latest", "--history", "hist"], ("is not a sweep id",)),
    ("CM10", ["compare", "host=vm", "latest", "--history", "hist"], ("unknown selector key",)),
    ("CM11", ["compare", "sweep=../../etc/passwd", "latest", "--history", "hist"],
     ("is not a sweep id",)),
    ("CM12", ["compare", "latest~1", "latest", "--history", "hist", "--tolerance", "nan"],
     ("--tolerance",)),
    ("CM14", ["compare", "latest~1", "latest", "--history", "hist", "--confidence", "1"],
     ("--confidence",)),
    ("CM15", ["compare", "latest~1", "latest", "--history", "hist", "--output", "r1"],
     ("exists",)),
    ("CM22", ["compare", "latest~1", "latest", "--history", "s3:///prefix"], ("bucket",)),
    ("CM24", ["compare", "latest~1", "latest", "--history", "s3://bucket/p?foo=bar"],
     ("cannot be opened", "foo")),
    ("CM28", ["compare", "latest~1", "latest", "--history", "ftp://127.0.0.1/x"],
     ("cannot be opened",)),
    ("AR1", ["archive", "hist"], ("sweep.json does not exist",)),
    ("AR2", ["archive", "no/such/results"], ("is not a folder",)),
    ("AR3", ["archive", "r1", "-o", "r1/tables/sweep.json"], ("exists",)),
    ("AR5", ["archive", "r1", "--report", "nope.html"], ("is not a file",)),
    ("AV-missing", ["archive", "--verify", "none.tar.zst"], ("does not exist",)),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "needles"), [c[1:] for c in GOOD], ids=[c[0] for c in GOOD])
def test_good_cases_stay_good(hist, sandbox: Path, capsys, argv, needles) -> None:
    before = files_under(sandbox)
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == ""
    one_error_line(err, *needles)
    assert files_under(sandbox) == before
    assert_untouched(sandbox)


def test_h10_adding_again_is_a_no_op(hist, capsys) -> None:
    path, records = hist
    before = files_under(path)
    code, out, _ = run_cli(["history", "add", "r1", "--history", str(path)], capsys)
    assert code == 0 and f"sweep {records[0]['sweep_id']} already in" in out
    assert files_under(path) == before


def test_stored_files_carry_their_sha256_in_the_record(hist) -> None:
    path, records = hist
    record = pq.read_table(stored(path, records[0], "sweep")).to_pylist()[0]
    for table in ("runs", "steps"):
        data = stored(path, records[0], table).read_bytes()
        assert record[f"{table}_file_sha256"] == hashlib.sha256(data).hexdigest()
