"""Per-collective summary of NCCL's trace lines (``NCCL_DEBUG=INFO``,
``NCCL_DEBUG_SUBSYS=COLL``)::

    node1:12345:12400 [0] NCCL INFO AllReduce: opCount 1a sendbuff 0x7f.. recvbuff 0x7f..
        count 2097152 datatype 7 op 0 root 0 comm 0x55.. [nranks=16] stream 0x..

A trace holds one line per collective per rank, so this pass costs time in proportion to
the trace; ``parse_log`` runs it only when asked (``nccl=True``). Lines are matched by one
regex over a whole window (``findall`` runs in C) and counted with ``Counter``.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import asdict, dataclass

WINDOW_BYTES = 16 << 20

DATATYPE_BYTES: dict[int, tuple[str, int]] = {
    0: ("int8", 1),
    1: ("uint8", 1),
    2: ("int32", 4),
    3: ("uint32", 4),
    4: ("int64", 8),
    5: ("uint64", 8),
    6: ("float16", 2),
    7: ("float32", 4),
    8: ("float64", 8),
    9: ("bfloat16", 2),
    10: ("float8e4m3", 1),
    11: ("float8e5m2", 1),
}
"""NCCL's ``ncclDataType_t`` values and their element sizes (nccl.h)."""

_COLLECTIVE = re.compile(
    rb"NCCL INFO ([A-Za-z]+): opCount [0-9a-fA-F]+ [^\n]{0,200}?count (\d{1,18}) datatype (\d{1,3})"
    rb"(?:[^\n]{0,120}?\[nranks=(\d{1,9})\])?"
)


@dataclass(frozen=True)
class CollectiveSummary:
    """All calls of one collective with one message size."""

    operation: str
    count: int  # elements per call
    datatype: str
    bytes: int  # count x element size; -1 for an unknown datatype
    nranks: int  # -1 when not logged
    calls: int

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def count_collectives(buffer: bytes, counts: Counter[tuple[bytes, bytes, bytes, bytes]]) -> None:
    """Add the trace lines found in ``buffer`` to ``counts``."""
    counts.update(_COLLECTIVE.findall(buffer))


def summarize_collectives(
    counts: Counter[tuple[bytes, bytes, bytes, bytes]],
) -> list[CollectiveSummary]:
    """One row per (operation, count, datatype, nranks), most bytes moved first."""
    rows = []
    for (op, count, dtype, nranks), calls in counts.items():
        name, size = DATATYPE_BYTES.get(int(dtype), (f"unknown({int(dtype)})", -1))
        elements = int(count)
        rows.append(
            CollectiveSummary(
                operation=op.decode("ascii"),
                count=elements,
                datatype=name,
                bytes=elements * size if size > 0 else -1,
                nranks=int(nranks) if nranks else -1,
                calls=calls,
            )
        )
    rows.sort(key=lambda r: (-r.bytes * r.calls, r.operation, r.count))
    return rows


def summarize_nccl_trace(path: str | os.PathLike[str]) -> list[CollectiveSummary]:
    """Read a whole log and summarize its NCCL collective trace lines."""
    counts: Counter[tuple[bytes, bytes, bytes, bytes]] = Counter()
    carry = b""
    with open(path, "rb") as fh:
        while chunk := fh.read(WINDOW_BYTES):
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0 and len(data) > WINDOW_BYTES:
                cut = len(data)  # one giant line: too long to be a trace line
            count_collectives(data[:cut], counts)
            carry = data[cut:]
        count_collectives(carry, counts)
    return summarize_collectives(counts)
