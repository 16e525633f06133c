"""Reading the history's tables, every file checked (``llmbench.history.checked``).

A ``SweepReader`` reads tables of the sweeps it is given (rows of ``sweep_index``): first
each sweep's record, which must match its folder and its own checksum, then the runs or
steps files, each checked against the record's sha256 before it is parsed (a ``release``
column names each release by its current name: ``spec`` reads as dgxc-2025). A sweep with
a damaged file is left out of everything read through that reader and kept in
``skipped`` with the line that says why, for the command to show; a sweep stored before
records held checksums is read unchecked and kept in ``unchecked``. An object store that
stops answering is an error, never a skipped sweep.

Files are read whole (one request each on object storage) by a few threads: reading,
hashing and decoding Parquet release the GIL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from llmbench.core.runspec import current_release
from llmbench.errors import ConfigError
from llmbench.history.checked import (
    FILE_SHA256,
    DamagedFile,
    check_record,
    check_sha256,
    fragment_schema,
    fragment_table,
    parquet_fragment,
    read_parquet,
    stored_bytes,
)
from llmbench.history.store import PARTITION_SCHEMA, PARTITIONS, History, sweep_dir

READ_THREADS = 8
_FORMAT = ds.ParquetFileFormat()
_T = TypeVar("_T")
_R = TypeVar("_R")
_Sweep = tuple[str, str, str]  # cluster, date, sweep id


@dataclass(frozen=True)
class Skipped:
    """A sweep left out, and the one line that says which file is damaged and how."""

    sweep_id: str
    reason: str

    def line(self) -> str:
        return f"sweep {self.sweep_id} left out: {self.reason}"


def _each(work: Callable[[_T], _R], items: Sequence[_T]) -> list[_R | DamagedFile]:
    """``work`` of every item, a few at a time; a ``DamagedFile`` is returned in its
    item's place, any other error raised."""

    def guarded(item: _T) -> _R | DamagedFile:
        try:
            return work(item)
        except DamagedFile as err:
            return err

    if len(items) < 3:
        return [guarded(i) for i in items]
    with ThreadPoolExecutor(min(READ_THREADS, len(items))) as pool:
        return list(pool.map(guarded, items))


def _sweeps(sweeps: pd.DataFrame) -> list[_Sweep]:
    return [
        (str(c), str(d), str(s))
        for c, d, s in sweeps[["cluster", "date", "sweep_id"]].itertuples(index=False)
    ]


class SweepReader:
    """Checked reads of one history's tables (module docstring)."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.skipped: dict[str, Skipped] = {}
        self.unchecked: set[str] = set()
        self._records: dict[str, dict[str, Any]] = {}

    def _read(self, sweep: _Sweep, table: str) -> tuple[bytes, str]:
        """A stored file's bytes, and its name in messages (inside the history)."""
        name = f"{sweep_dir(*sweep)}/{table}.parquet"
        return stored_bytes(self.history.fs, self.history.path(name), name), name

    def _load_record(self, sweep: _Sweep) -> tuple[dict[str, Any], bool]:
        data, name = self._read(sweep, "sweep")
        rows = read_parquet(data, name).to_pylist()
        if len(rows) != 1:
            raise DamagedFile(name, f"{len(rows)} rows; a sweep record has one")
        checked = check_record(rows[0], name)
        for field, value in zip(("cluster", "date", "sweep_id"), sweep, strict=True):
            if rows[0].get(field) != value:
                raise DamagedFile(
                    name, f"the record's {field} {rows[0].get(field)!r} is not its folder's"
                )
        return rows[0], checked

    def _leave_out(self, sweep_id: str, err: DamagedFile) -> None:
        self.skipped.setdefault(sweep_id, Skipped(sweep_id, str(err)))

    def _intact(self, sweeps: Iterable[_Sweep]) -> list[_Sweep]:
        """The sweeps whose records read and hold; the records are kept."""
        todo = [s for s in sweeps if s[2] not in self._records and s[2] not in self.skipped]
        for sweep, got in zip(todo, _each(self._load_record, todo), strict=True):
            if isinstance(got, DamagedFile):
                self._leave_out(sweep[2], got)
                continue
            self._records[sweep[2]], checked = got
            if not checked:
                self.unchecked.add(sweep[2])
        return [s for s in sweeps if s[2] in self._records and s[2] not in self.skipped]

    def records(self, sweeps: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The sweep records of the intact ``sweeps`` with the partition columns."""
        intact = self._intact(_sweeps(sweeps))
        rows = [
            {**self._records[sweep_id], "cluster": c, "date": d, "sweep": sweep_id}
            for c, d, sweep_id in intact
        ]
        names = list(columns) if columns else list(dict.fromkeys(k for r in rows for k in r))
        names = [n for n in names if n not in PARTITIONS] + list(PARTITIONS)
        return pd.DataFrame([{n: r.get(n) for n in names} for r in rows], columns=names)

    def _fragment(self, item: tuple[_Sweep, str]) -> tuple[ds.ParquetFileFragment, str]:
        sweep, table = item
        data, name = self._read(sweep, table)
        check_sha256(data, name, self._records[sweep[2]].get(FILE_SHA256[table]))
        partition = [ds.field(k) == v for k, v in zip(PARTITIONS, sweep, strict=True)]
        return parquet_fragment(data, name, partition[0] & partition[1] & partition[2]), name

    def read(
        self,
        sweeps: pd.DataFrame,
        table: str,
        columns: Sequence[str] | None = None,
        filter: ds.Expression | None = None,
    ) -> pd.DataFrame:
        """``table`` (runs, steps, sweep) of the intact ``sweeps`` with the partition
        columns cluster, date and sweep. Columns are unified by name across schema
        versions: one a sweep lacks reads as null."""
        if table == "sweep":
            return self.records(sweeps, columns)
        intact = self._intact(_sweeps(sweeps))
        found = []
        for sweep, got in zip(intact, _each(self._fragment, [(s, table) for s in intact]),
                              strict=True):  # fmt: skip
            if isinstance(got, DamagedFile):
                self._leave_out(sweep[2], got)
            else:
                found.append((sweep, got))
        if not found:
            return pd.DataFrame(columns=[*(columns or []), *PARTITIONS])
        try:  # one scan of every file, on Arrow's threads
            schema = _unified_schema([f for _, (f, _) in found], columns)
            wanted = [c for c in (columns or schema.names) if c not in PARTITIONS]
            dataset = ds.FileSystemDataset([f for _, (f, _) in found], schema, _FORMAT)
            table = dataset.to_table(columns=[*wanted, *PARTITIONS], filter=filter)
            return _current_release_names(table.to_pandas())
        except (pa.ArrowException, OSError):
            pass  # a file of an unchecked sweep does not decode: find it, file by file
        readable = []
        for sweep, (fragment, name) in found:
            try:
                fragment_schema(fragment, name)
                readable.append((sweep, fragment, name))
            except DamagedFile as err:
                self._leave_out(sweep[2], err)
        schema = _unified_schema([f for _, f, _ in readable], columns)
        wanted = [c for c in (columns or schema.names) if c not in PARTITIONS]
        parts = []
        for sweep, fragment, name in readable:
            try:
                parts.append(fragment_table(fragment, name, schema, [*wanted, *PARTITIONS], filter))
            except DamagedFile as err:
                self._leave_out(sweep[2], err)
        if not parts:
            return pd.DataFrame(columns=[*wanted, *PARTITIONS])
        return _current_release_names(pa.concat_tables(parts).to_pandas())


def _current_release_names(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each release under its current name: the runs table of an older
    llmbench says ``spec`` for dgxc-2025, and old and new sweeps must compare. The stored
    file is left as it is (its checksum is the record's)."""
    if "release" in frame.columns:
        frame["release"] = frame["release"].map(current_release, na_action="ignore")
    return frame


def _unified_schema(
    fragments: list[ds.ParquetFileFragment], columns: Sequence[str] | None
) -> pa.Schema:
    """Every file's columns merged by name (a column asked for that no file has reads
    as a null string), the partition columns last (from the folder names). Only the
    first footer is read when it has every column asked for."""
    schema = fragments[0].physical_schema if fragments else pa.schema([])
    if columns is None or any(c not in schema.names for c in columns if c not in PARTITIONS):
        schema = pa.unify_schemas(
            [f.physical_schema for f in fragments], promote_options="permissive"
        )
    missing = [c for c in columns or [] if c not in schema.names and c not in PARTITIONS]
    fields = [f for f in schema if f.name not in PARTITIONS]
    return pa.schema([*fields, *(pa.field(c, pa.string()) for c in missing), *PARTITION_SCHEMA])


def read_table(
    history: History,
    sweeps: pd.DataFrame,
    table: str,
    columns: Sequence[str] | None = None,
    filter: ds.Expression | None = None,
) -> pd.DataFrame:
    """``SweepReader.read`` of every one of ``sweeps``: a damaged file is an error here
    (one line naming it), not a sweep left out."""
    reader = SweepReader(history)
    frame = reader.read(sweeps, table, columns, filter)
    if reader.skipped:
        raise ConfigError(next(iter(reader.skipped.values())).line())
    return frame
