"""The table-building pool: jemalloc inside the block (pyarrow's Linux wheels have it),
the previous pool after it, also after an error, and arrays made inside still readable
after."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pyarrow as pa
import pytest

from llmbench.aggregate.arrow_memory import table_building_pool


@pytest.fixture
def system_pool() -> Iterator[str]:
    """The system allocator as the default pool during the test, whatever it was."""
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    yield pa.default_memory_pool().backend_name
    pa.set_memory_pool(previous)


@pytest.mark.skipif(sys.platform != "linux", reason="pyarrow's Linux wheels bundle jemalloc")
def test_arrow_allocates_from_jemalloc_inside_and_from_the_previous_pool_after(
    system_pool,
) -> None:
    assert system_pool == "system"
    with table_building_pool():
        assert pa.default_memory_pool().backend_name == "jemalloc"
        strings = pa.array([f"run-{i}" for i in range(1000)]).take(pa.array([999, 0, 1]))
    assert pa.default_memory_pool().backend_name == "system"
    assert strings.to_pylist() == ["run-999", "run-0", "run-1"]


def test_the_previous_pool_is_back_after_an_error(system_pool) -> None:
    with pytest.raises(RuntimeError), table_building_pool():
        raise RuntimeError("a failed table build")
    assert pa.default_memory_pool().backend_name == system_pool
