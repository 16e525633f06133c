"""The Arrow memory pool of the jobs that build tables of millions of rows.

pyarrow's default pool (mimalloc) backs fresh large buffers with transparent huge pages,
which the kernel zeroes on first touch; pyarrow's jemalloc pool does not. What that costs
the steps table of a 100,000-run sweep is measured in benchmarks/README.md (aggregate).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa


@contextmanager
def table_building_pool() -> Iterator[None]:
    """Arrow allocates from jemalloc inside the block where this pyarrow has it (Linux and
    macOS wheels; others keep the default pool), and from the previous pool after it.
    Buffers remember their pool, so arrays made inside stay valid outside."""
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # a build without jemalloc
        yield
        return
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pool)
    try:
        yield
    finally:
        pa.set_memory_pool(previous)
