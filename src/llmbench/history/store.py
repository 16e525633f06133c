"""The history: one Hive-partitioned Parquet dataset for every sweep of every cluster.

    <history>/cluster=<c>/date=<YYYY-MM-DD>/sweep=<id>/steps.parquet   per-iteration steps
                                                      /runs.parquet    one row per run
                                                      /sweep.parquet   the sweep record

Every sweep writes only into its own folder (the sweep id is unique), so several writers
on one shared file system need no lock. Each file is written under a temporary name and
then linked to its final name, which fails instead of replacing an existing file: nothing
is ever rewritten. ``sweep.parquet`` is written last and marks the sweep as complete; it
holds the sha256 of the other two stored files and of itself (``llmbench.history.checked``),
which every read checks. Adding a sweep again is a no-op (its tables' sha256 are in the
record); a sweep left half-written by a crash is completed when the files already there
hold the same tables, and refused when they do not. On object storage (a URL pyarrow.fs
opens: s3://, gs://, hdfs://) each object is put whole, which is atomic there.

Every table carries ``schema_version``; readers unify tables by column name, so a column
added later reads as null in older sweeps (docs/history.md).
"""

from __future__ import annotations

import io
import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from llmbench.aggregate.result_file import RESULT_FILE, result_file_problem
from llmbench.core.results_layout import RUNS_TABLE, STEPS_TABLE
from llmbench.core.results_layout import SWEEP as SWEEP_TABLE
from llmbench.core.results_layout import TABLES as TABLES_DIR
from llmbench.errors import ConfigError
from llmbench.files.atomic import write_json_atomic
from llmbench.files.regular_file import read_regular, why_unreadable
from llmbench.history.checked import (
    CHECKSUM_FIELDS,
    FILE_SHA256,
    RECORD_SHA256,
    DamagedFile,
    StoreUnreachable,
    check_record,
    first_line,
    read_parquet,
    record_sha256,
    sha256_hex,
    stored_bytes,
)
from llmbench.history.sweep import RECORD_FIELDS, SCHEMA_VERSION, read_sweep

TABLES = ("steps", "runs", "sweep")
"""In writing order: ``sweep`` last, the commit marker."""
PARTITIONS = ("cluster", "date", "sweep")
_SWEEP_PATH_RE = re.compile(
    r"^cluster=(?P<cluster>[^/]+)/date=(?P<date>[^/]+)/sweep=(?P<sweep>[^/]+)/(?P<file>[^/]+)$"
)
PARTITION_SCHEMA = pa.schema([(p, pa.string()) for p in PARTITIONS])
_COUNTS = ("schema_version", "runs", "steps")
SWEEP_SCHEMA = pa.schema(
    [
        (name, pa.int64() if name in _COUNTS else pa.string())
        for name in (
            *RECORD_FIELDS, "runs_sha256", "steps_sha256", "runs", "steps", *CHECKSUM_FIELDS,
        )
    ]
)  # fmt: skip
"""Typed, so that a field null in one sweep (no venv) and set in another reads as one."""
BUCKET_SCHEMES = ("s3", "gs", "gcs")
CREDENTIALS_FROM = (
    "s3:// reads AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), gs:// "
    "GOOGLE_APPLICATION_CREDENTIALS"
)


@dataclass(frozen=True)
class History:
    """A history location: a pyarrow file system and the dataset's root path in it."""

    fs: pafs.FileSystem
    root: str
    where: str

    @property
    def local(self) -> bool:
        return isinstance(self.fs, pafs.LocalFileSystem)

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])


def _check_url(where: str) -> None:
    """What pyarrow would accept but must not be: credentials inside the URL (they would
    be echoed and stored with the sweep's notes), a bucket URL without a bucket (it lists
    every bucket of the account), an option without a value."""
    parts = urlsplit(where)
    if "@" in parts.netloc:
        shown = re.sub(r"//[^/?#]*@", "//<credentials>@", where)
        raise ConfigError(
            f"history: {shown!r} holds credentials; allowed: the URL without them, the "
            f"credentials in the environment ({CREDENTIALS_FROM})"
        )
    if parts.scheme in BUCKET_SCHEMES and not parts.netloc:
        raise ConfigError(
            f"history: {where!r} names no bucket; allowed: {parts.scheme}://BUCKET/PREFIX"
        )
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if not value.strip():
            raise ConfigError(
                f"history: {where!r}: option {key!r} has no value; allowed: {key}=VALUE, "
                f"or no {key} option"
            )


def open_history(location: str | os.PathLike[str]) -> History:
    """A folder, or a URL pyarrow.fs understands (file://, s3://, gs://, hdfs://...)."""
    where = str(location)
    if not where:
        raise ConfigError("history: an empty location; allowed: a folder or a URL")
    if "://" not in where:
        return History(pafs.LocalFileSystem(), str(Path(where).resolve()), where)
    _check_url(where)
    try:
        fs, root = pafs.FileSystem.from_uri(where)
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise ConfigError(
            f"history: {where!r} cannot be opened ({first_line(exc)}); allowed: a "
            "folder, or a URL pyarrow.fs supports (file://, s3://, gs://, hdfs://)"
        ) from None
    return History(fs, root.rstrip("/"), where)


def sweep_dir(cluster: str, date: str, sweep_id: str) -> str:
    return f"cluster={cluster}/date={date}/sweep={sweep_id}"


# --- listing ---------------------------------------------------------------------------


def _unreachable(history: History, err: BaseException) -> StoreUnreachable:
    return StoreUnreachable(
        f"history {history.where!r} cannot be read ({first_line(err)}); allowed: a folder "
        "this user can read, or a store that answers (endpoint, network, credentials)"
    )


def _files(history: History) -> list[tuple[str, str, str, str]]:
    """(cluster, date, sweep, file name) of every file in the dataset, one listing call."""
    try:
        info = history.fs.get_file_info(history.root)
        if info.type == pafs.FileType.NotFound:
            return []
        if info.type != pafs.FileType.Directory:
            raise ConfigError(f"history: {history.where!r} is a file; allowed: a folder or a URL")
        entries = history.fs.get_file_info(pafs.FileSelector(history.root, recursive=True))
    except (OSError, pa.ArrowException) as err:
        raise _unreachable(history, err) from None
    prefix = history.root.rstrip("/") + "/"
    found = []
    for entry in entries:
        if entry.type != pafs.FileType.File or not entry.path.startswith(prefix):
            continue
        match = _SWEEP_PATH_RE.match(entry.path[len(prefix) :])
        if match:
            found.append(match.group("cluster", "date", "sweep", "file"))
    return found


def sweep_index(history: History) -> pd.DataFrame:
    """Complete sweeps (those with ``sweep.parquet``) from the folder names alone:
    cluster, date, sweep_id, oldest first (the id starts with its UTC time)."""
    rows = {(c, d, s) for c, d, s, name in _files(history) if name == "sweep.parquet"}
    frame = pd.DataFrame(sorted(rows, key=lambda r: (r[2], r[0])), columns=[*PARTITIONS])
    return frame.rename(columns={"sweep": "sweep_id"}).astype("string")


# --- adding a sweep --------------------------------------------------------------------


@dataclass(frozen=True)
class Added:
    sweep_id: str
    path: str
    new: bool


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    sink = io.BytesIO()
    frame.to_parquet(sink, index=False)
    return sink.getvalue()


def _results_table(path: Path) -> tuple[bytes, pd.DataFrame]:
    """A table of the results folder (bytes, frame), read as the history reads its own
    files: one line naming the file when it is missing, not a regular file or not
    Parquet."""
    try:
        data = read_regular(path)
    except FileNotFoundError:
        raise ConfigError(
            f"{path} does not exist; allowed: the results folder of a finished sweep"
        ) from None
    except OSError as err:
        raise ConfigError(
            f"{path}: cannot read ({why_unreadable(err)}); allowed: the table a finished "
            "sweep wrote (run snakemake again)"
        ) from None
    try:
        frame = read_parquet(data, str(path)).to_pandas()
    except DamagedFile as err:
        raise ConfigError(f"{err}; allowed: the table a finished sweep wrote (run snakemake "
                          "again)") from None  # fmt: skip
    return data, frame


def _history_tables(results: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The record row (without the stored files' checksums) and the bytes to store."""
    record = read_sweep(results / SWEEP_TABLE)
    blobs: dict[str, bytes] = {}
    digests = {}
    for name, table in (("runs", RUNS_TABLE), ("steps", STEPS_TABLE)):
        path = results / table
        raw, frame = _results_table(path)
        digests[f"{name}_sha256"] = sha256_hex(raw)
        if name == "runs" and "sweep_id" in frame.columns:
            stamped = set(frame["sweep_id"].dropna())
            if stamped - {record["sweep_id"]}:
                raise ConfigError(
                    f"{path}: runs of sweep {sorted(stamped)[0]!r} but {results / SWEEP_TABLE} "
                    f"names sweep {record['sweep_id']!r}; allowed: tables and record of one "
                    "invocation (run snakemake again)"
                )
        frame["sweep_id"] = record["sweep_id"]
        frame["schema_version"] = SCHEMA_VERSION
        blobs[name] = _parquet_bytes(frame)
    row = {
        **{k: record[k] for k in RECORD_FIELDS if k != "images"},
        "images": json.dumps(record["images"], sort_keys=True),
        **digests,
        "runs": int(pq.ParquetFile(io.BytesIO(blobs["runs"])).metadata.num_rows),
        "steps": int(pq.ParquetFile(io.BytesIO(blobs["steps"])).metadata.num_rows),
    }
    return row, blobs


def _record_bytes(row: dict[str, Any]) -> bytes:
    """``sweep.parquet``: the row with its own checksum (``checked.record_sha256``)."""
    sealed = {name: row.get(name) for name in SWEEP_SCHEMA.names}
    sealed[RECORD_SHA256] = record_sha256({k: v for k, v in sealed.items()})
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([sealed], schema=SWEEP_SCHEMA), sink)
    return sink.getvalue()


def _inside_root(history: History, folder: str) -> str:
    """The sweep folder's path, checked to stay inside the history's root: the record's
    fields are checked, and a link inside the history must not lead out of it either."""
    target = history.path(folder)
    if history.local:
        root = Path(history.root).resolve()
        if not Path(target).resolve().is_relative_to(root):
            raise ConfigError(
                f"history {history.where!r}: {folder} leads outside the history (through a "
                "link); allowed: sweep folders inside the history's own folder"
            )
    return target


def add_sweep(history: History, results: str | os.PathLike[str]) -> Added:
    """Append the sweep of a results folder (``tables/{runs,steps}.parquet`` and
    ``tables/sweep.json``) to the history; a no-op when it is already there."""
    results = Path(results)
    if not (results / TABLES_DIR).is_dir():
        raise ConfigError(
            f"{str(results)!r} has no tables/ folder; allowed: a results folder of a sweep"
        )
    _check_result_file(results)
    row, blobs = _history_tables(results)
    sweep_id = row["sweep_id"]
    folder = sweep_dir(row["cluster"], row["date"], sweep_id)
    elsewhere = sorted(
        {sweep_dir(c, d, s) for c, d, s, _ in _files(history) if s == sweep_id} - {folder}
    )
    if elsewhere:
        raise ConfigError(
            f"sweep {sweep_id} is already in the history under {elsewhere[0]}, not {folder}; "
            "allowed: the cluster and date it was added with (sweeps are never moved)"
        )
    target = _inside_root(history, folder)
    marker = f"{target}/sweep.parquet"
    if _exists(history, marker):
        _check_same(history, folder, row)
        return Added(sweep_id, target, False)
    try:
        history.fs.create_dir(target, recursive=True)
        for name in ("steps", "runs"):
            row[FILE_SHA256[name]] = _put_checked(history, folder, name, blobs[name], results)
        _put_new(history, marker, _record_bytes(row))
    except OSError as err:
        raise ConfigError(
            f"history {history.where!r}: cannot write {folder} ({first_line(err)}); allowed: "
            "a history this user can write"
        ) from None
    return Added(sweep_id, target, True)


def _check_result_file(results: Path) -> None:
    """A sweep whose ``result.json`` is damaged is refused (its tables may be too); one
    without it (an older llmbench's) is added."""
    problem = result_file_problem(results / RESULT_FILE)
    if problem:
        raise ConfigError(problem)


def _exists(history: History, path: str) -> bool:
    try:
        return history.fs.get_file_info(path).type != pafs.FileType.NotFound
    except (OSError, pa.ArrowException) as err:
        raise _unreachable(history, err) from None


def _put_checked(history: History, folder: str, table: str, data: bytes, results: Path) -> str:
    """Store one table file; the sha256 of the file that is there afterwards. A file
    left by an earlier add that stopped half-way is kept when it holds the same table,
    and refused (never sealed into a sweep) when it does not."""
    name = f"{folder}/{table}.parquet"
    path = history.path(name)
    if _put_new(history, path, data):
        return sha256_hex(data)
    there = stored_bytes(history.fs, path, name)
    if sha256_hex(there) == sha256_hex(data):
        return sha256_hex(there)
    try:
        same = read_parquet(there, name).equals(read_parquet(data, name))
        reason = "it holds other rows"
    except DamagedFile as err:
        same, reason = False, err.reason
    if not same:
        raise ConfigError(
            f"history {history.where!r}: {name} was left by an earlier add that stopped "
            f"half-way and is not the {table} table of {str(results)!r} ({reason}); allowed: "
            f"remove the unlisted folder {folder} (it has no sweep.parquet) and add again"
        )
    return sha256_hex(there)


def _check_same(history: History, folder: str, row: dict[str, Any]) -> None:
    name = f"{folder}/sweep.parquet"
    stored = read_parquet(stored_bytes(history.fs, history.path(name), name), name).to_pylist()
    if len(stored) != 1:
        raise DamagedFile(name, f"{len(stored)} rows; a sweep record has one")
    check_record(stored[0], name)
    for key in ("runs_sha256", "steps_sha256"):
        if stored[0].get(key) != row[key]:
            raise ConfigError(
                f"sweep {row['sweep_id']} is already in the history with other {key[:-7]} "
                "tables; allowed: adding the same tables again (a stored sweep is never "
                "rewritten)"
            )


def _put_new(history: History, path: str, data: bytes) -> bool:
    """Create ``path`` with ``data`` unless it exists (then it is left as it is and the
    answer is False)."""
    if history.local:
        final = Path(path)
        tmp = final.with_name(f".{final.name}.{secrets.token_hex(4)}.tmp")
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.link(tmp, final)  # atomic, and refuses to replace a file
        except FileExistsError:
            return False  # the same sweep's file, from an earlier try that stopped half-way
        finally:
            tmp.unlink(missing_ok=True)
        return True
    if history.fs.get_file_info(path).type == pafs.FileType.File:
        return False
    with history.fs.open_output_stream(path) as out:  # one PUT: atomic on object storage
        out.write(data)
    return True


def add_sweep_of_job(location: str, sweep_json: str | os.PathLike[str], added_json: str) -> str:
    """The history_add rule: add the sweep whose ``tables/sweep.json`` is ``sweep_json``
    to the history at ``location``, and note what was added in ``added_json``; returns a
    line for the job's log."""
    added = add_sweep(open_history(location), Path(sweep_json).parent.parent)
    write_json_atomic(
        added_json, {"sweep_id": added.sweep_id, "history": location, "path": added.path}
    )
    return f"sweep {added.sweep_id} {'added to' if added.new else 'already in'} {added.path}"
