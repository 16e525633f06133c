"""``llmbench archive``: members, manifest, secrets, profiles and traces, verification."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import zstandard
from matplotlib.figure import Figure

from llmbench.cli import main
from llmbench.errors import ConfigError
from llmbench.history.archive import MANIFEST, create_archive, verify_archive
from llmbench.history.redact import REDACTED
from tests.history.results import write_results

TOKEN = "hf_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"


def members(path: Path) -> dict[str, bytes]:
    with (
        open(path, "rb") as raw,
        zstandard.ZstdDecompressor().stream_reader(raw) as zst,
        tarfile.open(fileobj=zst, mode="r|") as tar,
    ):
        return {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A results folder with a run's attempt, logs with secrets, an nsys report, a trace
    dump, a credentials file and a stage folder."""
    root = tmp_path / "results"
    write_results(root, "eos", datetime(2026, 3, 1, tzinfo=timezone.utc))
    attempt = root / "runs" / "r1" / "attempt-1"
    attempt.mkdir(parents=True)
    (attempt / "launch.sh").write_text("#!/usr/bin/env bash\nexec python train.py\n")
    (attempt / "launch.sh").chmod(0o755)
    (attempt / "train.log").write_text(
        f"step 1 | train_step_timing in s: 1.0\nHF_TOKEN={TOKEN}\n"
        "remote: https://bob:hunter2@example.org/repo\nstep 2 | tokens_per_s: 3\n"
    )
    (attempt / "profile_1_0_0.nsys-rep").write_bytes(b"\0nsys")
    (attempt / "rank0.pt.trace.json").write_text("{}")
    (attempt / ".netrc").write_text("machine x login y password z\n")
    (root / "plots" / "g").mkdir(parents=True)
    (root / "plots" / "g" / "tokens_per_s.svg").write_text("<svg/>")
    (root / "stage" / "images").mkdir(parents=True)
    (root / "stage" / "images" / "x.sqsh").write_bytes(b"\0" * 10)
    (root / "report.html").write_text("<html>report</html>")
    return root


def test_archive_members_manifest_and_verify(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.tar.zst"
    created = create_archive(results, out)
    sweep_id = json.loads((results / "tables" / "sweep.json").read_text())["sweep_id"]
    got = members(out)
    names = sorted(got)
    assert names[-1] == f"{sweep_id}/{MANIFEST}" or f"{sweep_id}/{MANIFEST}" in names
    assert all(n.startswith(f"{sweep_id}/") and ".." not in n for n in names)
    rel = {n.split("/", 1)[1] for n in names}
    assert {"runs/r1/attempt-1/launch.sh", "runs/r1/attempt-1/train.log", "tables/runs.parquet",
            "tables/steps.parquet", "tables/sweep.json", "report.html",
            "plots/g/tokens_per_s.svg"} <= rel  # fmt: skip
    assert not any(n.startswith("stage/") for n in rel)
    assert "runs/r1/attempt-1/profile_1_0_0.nsys-rep" not in rel
    assert "runs/r1/attempt-1/rank0.pt.trace.json" not in rel
    assert "runs/r1/attempt-1/.netrc" not in rel
    manifest = json.loads(got[f"{sweep_id}/{MANIFEST}"])
    listed = {m["path"]: m for m in manifest["members"]}
    assert set(listed) == set(got) - {f"{sweep_id}/{MANIFEST}"}
    for name, data in got.items():
        if name in listed:
            assert listed[name]["sha256"] == hashlib.sha256(data).hexdigest()
            assert listed[name]["size"] == len(data)
    assert manifest["left_out"] == {
        "profile": ["runs/r1/attempt-1/profile_1_0_0.nsys-rep"],
        "trace": ["runs/r1/attempt-1/rank0.pt.trace.json"],
        "secret": ["runs/r1/attempt-1/.netrc"],
        "link": [],
        "special": [],
        "name": [],
    }
    assert created.members == len(listed)
    assert verify_archive(out).members == len(listed)


def test_secrets_are_redacted_in_text_members(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.tar.zst"
    create_archive(results, out)
    everything = b"".join(members(out).values())
    assert TOKEN.encode() not in everything and b"hunter2" not in everything
    log = next(v for k, v in members(out).items() if k.endswith("train.log")).decode()
    assert "HF_TOKEN=<redacted>" in log and "https://bob:<redacted>@example.org" in log
    assert "train_step_timing in s: 1.0" in log and "tokens_per_s: 3" in log
    manifest = json.loads(next(v for k, v in members(out).items() if k.endswith(MANIFEST)))
    assert [m["redacted"] for m in manifest["members"] if "redacted" in m] == [2]


def test_profiles_and_traces_on_request(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.tar.zst"
    create_archive(results, out, with_profiles=True, with_traces=True)
    rel = {n.split("/", 1)[1] for n in members(out)}
    assert "runs/r1/attempt-1/profile_1_0_0.nsys-rep" in rel
    assert "runs/r1/attempt-1/rank0.pt.trace.json" in rel
    assert "runs/r1/attempt-1/.netrc" not in rel  # secrets: never
    assert verify_archive(out).members == len(rel) - 1


def _rewrite(src: Path, dst: Path, change) -> None:
    """Re-pack an archive with ``change(name, data) -> data | None`` applied."""
    with (
        open(dst, "wb") as raw,
        zstandard.ZstdCompressor().stream_writer(raw) as zst,
        tarfile.open(fileobj=zst, mode="w|") as tar,
    ):
        for name, data in members(src).items():
            new = change(name, data)
            if new is not None:
                info = tarfile.TarInfo(name)
                info.size = len(new)
                tar.addfile(info, io.BytesIO(new))


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda n, d: d + b"x" if n.endswith("train.log") else d, "differs from the manifest"),
        (lambda n, d: None if n.endswith("runs.parquet") else d, "manifest member.s. missing"),
        (lambda n, d: None if n.endswith(MANIFEST) else d, "no <sweep id>/MANIFEST.json"),
    ],
)
def test_verify_finds_altered_archives(results, tmp_path: Path, change, needle) -> None:
    good = tmp_path / "good.tar.zst"
    create_archive(results, good)
    bad = tmp_path / "bad.tar.zst"
    _rewrite(good, bad, change)
    with pytest.raises(ConfigError, match=needle):
        verify_archive(bad)


def test_corrupt_archives_are_one_line(results: Path, tmp_path: Path, capsys) -> None:
    good = tmp_path / "good.tar.zst"
    create_archive(results, good)
    cut = tmp_path / "cut.tar.zst"
    cut.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])
    junk = tmp_path / "junk.tar.zst"
    junk.write_bytes(b"not an archive at all")
    for path, needle in ((cut, "corrupt tar"), (junk, "not a readable zstd stream"),
                         (tmp_path / "none.tar.zst", "does not exist")):  # fmt: skip
        assert main(["archive", "--verify", str(path)]) == 2
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1 and "Traceback" not in err
    assert main(["archive", "--verify", str(good)]) == 0
    assert "members verified" in capsys.readouterr().out


def test_archive_never_replaces_a_file(results: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "a.tar.zst"
    out.write_text("mine")
    assert main(["archive", str(results), "-o", str(out)]) == 2
    assert "exists; allowed: a new file name" in capsys.readouterr().err
    assert out.read_text() == "mine"
    assert main(["archive", str(tmp_path / "nothing")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def _decoded(name: str, data: bytes) -> list[bytes]:
    """What a member holds once decoded, for the binary formats a run writes or packs:
    every text value of a Parquet table, a gzip's or a zip's content."""
    if data.startswith(b"PAR1"):
        table = pq.read_table(io.BytesIO(data))
        return [str(v).encode() for column in table.columns for v in column.to_pylist()]
    if data.startswith(b"\x1f\x8b"):
        return [gzip.decompress(data)]
    if data.startswith(b"PK\x03\x04"):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return [z.read(n) for n in z.namelist()]
    return []


def _png(path: Path, comment: str | None) -> None:
    fig = Figure(figsize=(1, 1))
    fig.subplots().plot([0, 1])
    fig.savefig(path, metadata={"Comment": comment} if comment else {})


def test_tokens_in_every_file_type_never_reach_the_archive(results: Path, tmp_path: Path) -> None:
    """A token planted in each kind of file a run writes (a log with NUL bytes, JSON,
    CSV, a shell script, HTML, SVG, a PNG's text, Parquet values under zstd, a gzip, a
    zip) and in a folder name: no byte of any member, nor what a member holds once
    decoded, carries it. Text kinds go in redacted; binary ones that show the token are
    left out as secrets, and clean binary files go in unchanged."""
    run = results / "runs" / "r1" / "attempt-1"
    (run / "train.log").write_bytes(b"\0\x01binary start\n" + f"HF_TOKEN={TOKEN}\n".encode()
                                    + b"\0" * 9000 + f"later {TOKEN} again\n".encode())  # fmt: skip
    (run / "run.json").write_text(json.dumps({"env": {"HF_TOKEN": TOKEN}, "cmd": f"x {TOKEN}"}))
    (run / "launch.sh").write_text(f"#!/bin/sh\nexport WANDB_API_KEY={TOKEN}\nexec train\n")
    (results / "tables" / "runs.csv").write_text(f"run_id,note\nr1,{TOKEN}\n")
    (results / "report.html").write_text(f"<html><body><pre>{TOKEN}</pre></body></html>")
    (results / "plots" / "g" / "step.svg").write_text(f"<svg><desc>{TOKEN}</desc></svg>")
    _png(results / "plots" / "g" / "with-token.png", f"token {TOKEN}")
    _png(results / "plots" / "g" / "clean.png", None)
    frame = pd.DataFrame({"run_id": ["r1", "r2"], "note": [f"x {TOKEN}", "fine"]})
    frame.to_parquet(run / "extra.parquet", compression="zstd", index=False)
    pd.DataFrame({"run_id": ["r1"]}).to_parquet(run / "clean.parquet", index=False)
    (run / "telemetry.csv.gz").write_bytes(gzip.compress(f"gpu,0\nkey,{TOKEN}\n".encode()))
    with zipfile.ZipFile(results / "report.zip", "w") as z:
        z.writestr("report/index.html", f"<p>{TOKEN}</p>")
    (results / "runs" / TOKEN).mkdir()
    (results / "runs" / TOKEN / "x.log").write_text("nothing secret\n")
    out = tmp_path / "a.tar.zst"
    created = create_archive(results, out)
    assert verify_archive(out).members == created.members
    with open(out, "rb") as raw:
        stream = zstandard.ZstdDecompressor().stream_reader(raw).read()
    assert TOKEN.encode() not in stream  # every byte: names, members, manifest
    got = members(out)
    for name, data in got.items():
        for part in _decoded(name, data):
            assert TOKEN.encode() not in part, name
    rel = {n.split("/", 1)[1]: data for n, data in got.items()}
    assert "HF_TOKEN=<redacted>" in rel["runs/r1/attempt-1/train.log"].decode("latin-1")
    assert rel["runs/r1/attempt-1/train.log"].startswith(b"\0\x01binary start\n")
    for text in ("runs/r1/attempt-1/run.json", "runs/r1/attempt-1/launch.sh", "tables/runs.csv",
                 "report.html", "plots/g/step.svg"):  # fmt: skip
        assert REDACTED.encode() in rel[text], text
    secret = set(created.left_out["secret"])
    assert {"plots/g/with-token.png", "runs/r1/attempt-1/extra.parquet",
            "runs/r1/attempt-1/telemetry.csv.gz", "report.zip"} <= secret  # fmt: skip
    assert rel["plots/g/clean.png"] == (results / "plots/g/clean.png").read_bytes()
    clean = (results / "runs/r1/attempt-1/clean.parquet").read_bytes()
    assert rel["runs/r1/attempt-1/clean.parquet"] == clean
