"""The history: one Hive-partitioned Parquet dataset for every sweep of every cluster.

    <history>/cluster=<c>/date=<YYYY-MM-DD>/sweep=<id>/steps.parquet   per-iteration steps
                                                      /runs.parquet    one row per run
                                                      /sweep.parquet   the sweep record

Every sweep writes only into its own folder (the sweep id is unique), so several writers
on one shared file system need no lock. Each file is written under a temporary name and
then linked to its final name, which fails instead of replacing an existing file: nothing
is ever rewritten. ``sweep.parquet`` is written last and marks the sweep as complete;
adding a sweep again is a no-op (its tables' sha256 are in the record), and a sweep left
half-written by a crash is completed. On object storage (a URL pyarrow.fs opens: s3://,
gs://, hdfs://) each object is put whole, which is atomic there.

Every table carries ``schema_version``; readers unify tables by column name, so a column
added later reads as null in older sweeps (docs/history.md).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from llmbench.atomic import write_json_atomic
from llmbench.errors import ConfigError
from llmbench.history.sweep import RECORD_FIELDS, SCHEMA_VERSION, SWEEP_FILE, read_sweep

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
        for name in (*RECORD_FIELDS, "runs_sha256", "steps_sha256", "runs", "steps")
    ]
)
"""Typed, so that a field null in one sweep (no venv) and set in another reads as one."""


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


def open_history(location: str | os.PathLike[str]) -> History:
    """A folder, or a URL pyarrow.fs understands (file://, s3://, gs://, hdfs://...)."""
    where = str(location)
    if not where:
        raise ConfigError("history: an empty location; allowed: a folder or a URL")
    if "://" not in where:
        return History(pafs.LocalFileSystem(), str(Path(where).resolve()), where)
    try:
        fs, root = pafs.FileSystem.from_uri(where)
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise ConfigError(
            f"history: {where!r} cannot be opened ({str(exc).splitlines()[0]}); allowed: a "
            "folder, or a URL pyarrow.fs supports (file://, s3://, gs://, hdfs://)"
        ) from None
    return History(fs, root.rstrip("/"), where)


def sweep_dir(cluster: str, date: str, sweep_id: str) -> str:
    return f"cluster={cluster}/date={date}/sweep={sweep_id}"


# --- listing ---------------------------------------------------------------------------


def _files(history: History) -> list[tuple[str, str, str, str]]:
    """(cluster, date, sweep, file name) of every file in the dataset, one listing call."""
    info = history.fs.get_file_info(history.root)
    if info.type == pafs.FileType.NotFound:
        return []
    if info.type != pafs.FileType.Directory:
        raise ConfigError(f"history: {history.where!r} is a file; allowed: a folder or a URL")
    selector = pafs.FileSelector(history.root, recursive=True)
    prefix = history.root.rstrip("/") + "/"
    found = []
    for entry in history.fs.get_file_info(selector):
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


def _paths(history: History, sweeps: pd.DataFrame, table: str) -> list[str]:
    return [
        history.path(sweep_dir(c, d, s), f"{table}.parquet")
        for c, d, s in sweeps[["cluster", "date", "sweep_id"]].itertuples(index=False)
    ]


def read_table(
    history: History,
    sweeps: pd.DataFrame,
    table: str,
    columns: Sequence[str] | None = None,
    filter: ds.Expression | None = None,
) -> pd.DataFrame:
    """``table`` (runs, steps, sweep) of the given sweeps (rows of ``sweep_index``) with
    the partition columns cluster, date and sweep. Columns are unified by name across
    schema versions: one a sweep lacks reads as null."""
    paths = _paths(history, sweeps, table)
    if not paths:
        return pd.DataFrame(columns=[*(columns or []), *PARTITIONS])
    fragments = ds.dataset(paths, format="parquet", filesystem=history.fs)
    schema = _unified_schema(fragments, columns)
    dataset = ds.dataset(
        paths,
        schema=schema,
        format="parquet",
        filesystem=history.fs,
        partitioning=ds.partitioning(PARTITION_SCHEMA, flavor="hive"),
        partition_base_dir=history.root,
    )
    wanted = [*(columns or schema.names[: -len(PARTITIONS)])]
    wanted += [p for p in PARTITIONS if p not in wanted]
    return dataset.to_table(columns=wanted, filter=filter).to_pandas()


def _unified_schema(dataset: ds.Dataset, columns: Sequence[str] | None) -> pa.Schema:
    """Every fragment's columns merged by name, plus the partition columns. Only footers
    are read, and only the first one when it has every column asked for."""
    schema = dataset.schema
    if columns is None or any(c not in schema.names for c in columns):
        schema = pa.unify_schemas(
            [f.physical_schema for f in dataset.get_fragments()], promote_options="permissive"
        )
        missing = [c for c in columns or [] if c not in schema.names and c not in PARTITIONS]
        schema = pa.schema([*schema, *(pa.field(c, pa.string()) for c in missing)])
    fields = [f for f in schema if f.name not in PARTITIONS]
    return pa.schema([*fields, *PARTITION_SCHEMA])


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


def _history_tables(results: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    tables = results / "tables"
    record = read_sweep(tables / SWEEP_FILE)
    blobs: dict[str, bytes] = {}
    digests = {}
    for name in ("runs", "steps"):
        path = tables / f"{name}.parquet"
        if not path.is_file():
            raise ConfigError(
                f"{path} does not exist; allowed: the results folder of a finished sweep"
            )
        raw = path.read_bytes()
        digests[f"{name}_sha256"] = hashlib.sha256(raw).hexdigest()
        frame = pd.read_parquet(io.BytesIO(raw))
        if name == "runs" and "sweep_id" in frame.columns:
            stamped = set(frame["sweep_id"].dropna())
            if stamped - {record["sweep_id"]}:
                raise ConfigError(
                    f"{path}: runs of sweep {sorted(stamped)[0]!r} but {tables / SWEEP_FILE} "
                    f"names sweep {record['sweep_id']!r}; allowed: tables and record of one "
                    "invocation (run snakemake again)"
                )
        frame["sweep_id"] = record["sweep_id"]
        frame["schema_version"] = SCHEMA_VERSION
        blobs[name] = _parquet_bytes(frame)
    row = {
        **{k: v for k, v in record.items() if k != "images"},
        "images": json.dumps(record["images"], sort_keys=True),
        **digests,
        "runs": int(pq.ParquetFile(io.BytesIO(blobs["runs"])).metadata.num_rows),
        "steps": int(pq.ParquetFile(io.BytesIO(blobs["steps"])).metadata.num_rows),
    }
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([row], schema=SWEEP_SCHEMA), sink)
    blobs["sweep"] = sink.getvalue()
    return row, blobs


def add_sweep(history: History, results: str | os.PathLike[str]) -> Added:
    """Append the sweep of a results folder (``tables/{runs,steps}.parquet`` and
    ``tables/sweep.json``) to the history; a no-op when it is already there."""
    results = Path(results)
    if not (results / "tables").is_dir():
        raise ConfigError(
            f"{str(results)!r} has no tables/ folder; allowed: a results folder of a sweep"
        )
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
    target = history.path(folder)
    marker = f"{target}/sweep.parquet"
    if history.fs.get_file_info(marker).type == pafs.FileType.File:
        _check_same(history, marker, row, sweep_id)
        return Added(sweep_id, target, False)
    history.fs.create_dir(target, recursive=True)
    for name in TABLES:
        _put_new(history, f"{target}/{name}.parquet", blobs[name])
    return Added(sweep_id, target, True)


def _check_same(history: History, marker: str, row: dict[str, Any], sweep_id: str) -> None:
    with history.fs.open_input_file(marker) as fh:
        stored = pq.read_table(fh).to_pylist()[0]
    for key in ("runs_sha256", "steps_sha256"):
        if stored.get(key) != row[key]:
            raise ConfigError(
                f"sweep {sweep_id} is already in the history with other {key[:-7]} tables; "
                "allowed: adding the same tables again (a stored sweep is never rewritten)"
            )


def _put_new(history: History, path: str, data: bytes) -> None:
    """Create ``path`` with ``data`` unless it exists (then it is left as it is)."""
    if history.local:
        final = Path(path)
        tmp = final.with_name(f".{final.name}.{secrets.token_hex(4)}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, final)  # atomic, and refuses to replace a file
        except FileExistsError:
            pass  # the same sweep's file, from an earlier try that stopped half-way
        finally:
            tmp.unlink()
        return
    if history.fs.get_file_info(path).type == pafs.FileType.File:
        return
    with history.fs.open_output_stream(path) as out:  # one PUT: atomic on object storage
        out.write(data)


def sweeps_in(history: History, sweep_ids: Iterable[str]) -> pd.DataFrame:
    """Index rows of the given sweep ids (in that order); unknown ids are left out."""
    index = sweep_index(history).set_index("sweep_id", drop=False)
    wanted = [s for s in sweep_ids if s in index.index]
    return index.loc[wanted].reset_index(drop=True)


def add_sweep_of_job(location: str, sweep_json: str | os.PathLike[str], added_json: str) -> str:
    """The history_add rule: add the sweep whose ``tables/sweep.json`` is ``sweep_json``
    to the history at ``location``, and note what was added in ``added_json``; returns a
    line for the job's log."""
    added = add_sweep(open_history(location), Path(sweep_json).parent.parent)
    write_json_atomic(
        added_json, {"sweep_id": added.sweep_id, "history": location, "path": added.path}
    )
    return f"sweep {added.sweep_id} {'added to' if added.new else 'already in'} {added.path}"
