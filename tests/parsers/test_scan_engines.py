"""The Hyperscan engine and the bytes.find engine find exactly the same hits."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmbench.parsers import scan
from llmbench.parsers.scan import LineScanner, Needle

pytestmark = pytest.mark.prerequisite(scan.hyperscan is not None, "hyperscan is not installed")

NEEDLES = (
    Needle(b"train_step_timing in s", "nemo"),
    Needle(b"Global Checkpoint", "checkpoint"),
    Needle(b"(x)+[y]", "regex-metacharacters"),
    Needle(b"CUDA out of memory", "failure", tail_only=True),
)
pieces = st.sampled_from(
    [n.text for n in NEEDLES] + [b"\n", b"\r\n", b"noise ", b"\x00\xff", b"train_step", b"x" * 50]
)
logs = st.lists(pieces, max_size=60).map(b"".join)


@settings(max_examples=3000, deadline=None)
@given(log=logs, core=st.tuples(st.integers(0, 400), st.integers(0, 400)))
def test_positions_agree(log: bytes, core: tuple[int, int]) -> None:
    lo, hi = sorted(core)
    lo, hi = min(lo, len(log)), min(hi, len(log))
    active = tuple(n for n in NEEDLES)
    assert scan._hyperscan_positions(log, lo, hi, active) == scan._find_positions(
        log, lo, hi, active
    )


@settings(max_examples=1500, deadline=None)
@given(log=logs, window=st.integers(1, 64), tail=st.integers(0, 200))
def test_scanner_hits_agree(log: bytes, window: int, tail: int) -> None:
    def hits(engine: object) -> list:
        saved, scan.hyperscan = scan.hyperscan, engine
        try:
            scanner = LineScanner(NEEDLES, tail_bytes=tail, window_bytes=window, context_bytes=16)
            return [h for window_hits in scanner.scan_bytes(log) for h in window_hits]
        finally:
            scan.hyperscan = saved

    assert hits(scan.hyperscan) == hits(None)
