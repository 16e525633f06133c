"""The one reader of stored Parquet files: a file is read whole, its sha256 compared with
the one its sweep record holds (when it holds one), and only then parsed. Whatever goes
wrong, a missing, truncated or altered file, Arrow's or the file system's errors, is a
``DamagedFile``: one line naming the file and what is wrong with it.

The sweep record (``sweep.parquet``, written last) holds the sha256 of the stored
``runs.parquet`` and ``steps.parquet`` (``runs_file_sha256``, ``steps_file_sha256``) and
of its own other fields (``record_sha256``: canonical JSON, sorted keys), so one flipped
bit anywhere in a sweep is found before a number is read. A record without any of the
three was stored by an llmbench that wrote no checksums: its sweep reads unchecked
(docs/history.md, "Checked reads").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from llmbench.errors import ConfigError
from llmbench.files.regular_file import read_regular, why_unreadable

RECORD_SHA256 = "record_sha256"
FILE_SHA256 = {"runs": "runs_file_sha256", "steps": "steps_file_sha256"}
"""The record field that holds the sha256 of each stored table file."""
CHECKSUM_FIELDS = (*FILE_SHA256.values(), RECORD_SHA256)
_FORMAT = ds.ParquetFileFormat()


class DamagedFile(ConfigError):
    """A file that cannot be read as what it should be; the message names it."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class StoreUnreachable(ConfigError):
    """The file system or object store of a history did not answer."""


def stored_bytes(fs: pafs.FileSystem, path: str, name: str | None = None) -> bytes:
    """The whole file: ``DamagedFile`` when it is missing, not a regular file or
    unreadable; ``StoreUnreachable`` when an object store fails to answer. ``name``:
    the file as messages name it (default: ``path``)."""
    name = name or path
    try:
        if isinstance(fs, pafs.LocalFileSystem):
            return read_regular(path)
        with fs.open_input_file(path) as fh:
            return fh.read()
    except FileNotFoundError:
        raise DamagedFile(name, "missing") from None
    except OSError as err:
        if isinstance(fs, pafs.LocalFileSystem):
            raise DamagedFile(name, f"cannot be read ({why_unreadable(err)})") from None
        raise StoreUnreachable(
            f"{name}: cannot be read ({first_line(err)}); allowed: a store that answers "
            "(endpoint, network, credentials)"
        ) from None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_sha256(data: bytes, name: str, expected: str | None) -> None:
    """``DamagedFile`` unless ``data`` has the sha256 ``expected`` (None: unchecked)."""
    if expected is None:
        return
    found = sha256_hex(data)
    if found != expected:
        raise DamagedFile(
            name,
            f"sha256 {found[:12]}... differs from {expected[:12]}... in the sweep record "
            "(the file changed after it was stored)",
        )


def first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def parquet_fragment(
    data: bytes, name: str, partition: ds.Expression | None = None
) -> ds.ParquetFileFragment:
    """A Parquet file in memory (its footer is read when first needed).
    ``partition``: the values its rows take in the partition columns."""
    return _FORMAT.make_fragment(pa.BufferReader(data), partition_expression=partition)


def fragment_schema(fragment: ds.ParquetFileFragment, name: str) -> pa.Schema:
    """The fragment's columns, from its footer: ``DamagedFile`` if it is not Parquet."""
    try:
        return fragment.physical_schema
    except (pa.ArrowException, OSError) as err:
        raise DamagedFile(name, f"not a readable Parquet file ({first_line(err)})") from None


def fragment_table(
    fragment: ds.ParquetFileFragment,
    name: str,
    schema: pa.Schema | None = None,
    columns: Sequence[str] | None = None,
    filter: ds.Expression | None = None,
) -> pa.Table:
    """The fragment's rows (``schema``: the columns it lacks read as null); the pages
    that cannot be decoded are a ``DamagedFile``."""
    try:
        return fragment.to_table(
            schema=schema, columns=None if columns is None else list(columns), filter=filter
        )
    except (pa.ArrowException, OSError) as err:
        raise DamagedFile(name, f"not a readable Parquet file ({first_line(err)})") from None


def read_parquet(
    data: bytes, name: str, sha256: str | None = None, columns: Sequence[str] | None = None
) -> pa.Table:
    """Bytes of a Parquet file, checked (``check_sha256``), as one table."""
    check_sha256(data, name, sha256)
    try:
        return pq.ParquetFile(pa.BufferReader(data)).read(columns=columns)
    except (pa.ArrowException, OSError) as err:
        raise DamagedFile(name, f"not a readable Parquet file ({first_line(err)})") from None


def record_sha256(row: Mapping[str, Any]) -> str:
    """sha256 of a stored sweep record's fields but ``record_sha256``, as canonical JSON."""
    fields = {k: v for k, v in row.items() if k != RECORD_SHA256}
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return sha256_hex(text.encode())


def check_record(row: Mapping[str, Any], name: str) -> bool:
    """True when the stored record ``row`` carries checksums and they hold, False when it
    carries none (stored before llmbench wrote them); ``DamagedFile`` otherwise."""
    present = [row.get(name) is not None for name in CHECKSUM_FIELDS]
    if not any(present):
        return False
    if not all(present):
        missing = [n for n, p in zip(CHECKSUM_FIELDS, present, strict=True) if not p]
        raise DamagedFile(name, f"the sweep record lacks {', '.join(missing)}")
    if record_sha256(row) != row[RECORD_SHA256]:
        raise DamagedFile(
            name, "the sweep record's fields do not match its record_sha256 (damaged)"
        )
    return True
