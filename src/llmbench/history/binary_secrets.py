"""Secrets inside binary files, which cannot be redacted without breaking the file: a
Parquet table, an image, a compressed file. ``shows_secret_in`` scans the file's bytes
and, for the containers a run writes or packs (Parquet, gzip, zstd, zip), what they hold
once decoded, with the rules of ``llmbench.history.redact``. The archive leaves out a file in
which a secret shows."""

from __future__ import annotations

import gzip
import zipfile
import zlib
from pathlib import Path
from typing import IO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import zstandard

from llmbench.files.regular_file import open_regular
from llmbench.history.redact import shows_secret

CHUNK_BYTES = 1 << 20
OVERLAP_BYTES = 4096
"""Bytes of one chunk read again with the next, so a token across the cut is seen."""
UNDECODABLE = (
    EOFError, ValueError, NotImplementedError, zlib.error, gzip.BadGzipFile,
    zipfile.BadZipFile, zstandard.ZstdError, pa.ArrowException,
)  # fmt: skip
"""What a damaged container raises while it is decoded."""


def _stream_shows_secret(stream: IO[bytes]) -> bool:
    """Scan a byte stream in chunks; Latin-1 maps every byte to one character, so the
    text rules see ASCII tokens wherever they sit between binary bytes."""
    tail = b""
    while chunk := stream.read(CHUNK_BYTES):
        window = tail + chunk
        if shows_secret(window.decode("latin-1")):
            return True
        tail = window[-OVERLAP_BYTES:]
    return False


def _texts(column: pa.Array) -> list[str]:
    """The distinct text values of a string, binary or dictionary column."""
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    kind = column.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)
            or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):  # fmt: skip
        return []
    values = pc.unique(column).to_pylist()
    return [v.decode("latin-1") if isinstance(v, bytes) else v for v in values if v is not None]


def _parquet_shows_secret(path: Path) -> bool:
    with open_regular(path) as fh:
        table_file = pq.ParquetFile(fh)
        schema = table_file.schema_arrow
        metadata = [v.decode("latin-1") for v in (schema.metadata or {}).values()]
        if any(shows_secret(text) for text in [*schema.names, *metadata]):
            return True
        for batch in table_file.iter_batches():
            if any(shows_secret(text) for column in batch.columns for text in _texts(column)):
                return True
    return False


def _zip_shows_secret(path: Path) -> bool:
    with open_regular(path) as fh, zipfile.ZipFile(fh) as archive:
        for info in archive.infolist():
            if shows_secret(info.filename):
                return True
            with archive.open(info) as member:
                if _stream_shows_secret(member):
                    return True
    return False


def _decoded_shows_secret(path: Path, kind: str) -> bool:
    if kind == "parquet":
        return _parquet_shows_secret(path)
    if kind == "zip":
        return _zip_shows_secret(path)
    if kind == "gzip":
        with open_regular(path) as fh, gzip.GzipFile(fileobj=fh) as stream:
            return _stream_shows_secret(stream)
    if kind == "zstd":
        with (
            open_regular(path) as fh,
            zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True) as stream,
        ):
            return _stream_shows_secret(stream)
    return False


def shows_secret_in(path: Path, kind: str) -> bool:
    """True when a secret shows in the binary file ``path`` of format ``kind``
    (``redact.binary_format``): in its bytes, or in what it holds once decoded. A
    container that cannot be decoded has had its bytes scanned; nothing more can be."""
    with open_regular(path) as fh:
        if _stream_shows_secret(fh):
            return True
    try:
        return _decoded_shows_secret(path, kind)
    except UNDECODABLE:
        return False
