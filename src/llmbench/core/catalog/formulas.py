"""Scale ranges and GPU-count formulas as the Megatron-Bridge tables write them.

llama31-megatron-bridge-gb300-gb200-b200-h100.md gives ``GPUs`` as a range (``128-1024``)
or one scale (``1024``), and DP / GBS as formulas in the GPU count (``GPUs``, ``GPUs/2``,
``GPUs*16``). They are kept as these strings in the catalog and evaluated here.
"""

from __future__ import annotations

import re

from llmbench.errors import ConfigError

_FORMULA = re.compile(r"^\s*GPUs\s*(?:([*/])\s*(\d+))?\s*$")
_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*$")


def is_formula(value: object) -> bool:
    """True for a string formula in ``GPUs`` (``GPUs``, ``GPUs/2``, ``GPUs*16``)."""
    return isinstance(value, str) and _FORMULA.match(value) is not None


def evaluate(formula: str, gpus: int, field: str) -> int:
    """Value of ``formula`` at ``gpus``; ConfigError unless it is a positive integer."""
    match = _FORMULA.match(formula)
    if match is None:
        raise ConfigError(f"{field}={formula!r}: not a formula; allowed: GPUs, GPUs/N, GPUs*N")
    op, operand = match.group(1), match.group(2)
    if op is None:
        return gpus
    n = int(operand)
    if op == "*":
        return gpus * n
    if n == 0 or gpus % n:
        raise ConfigError(
            f"{field}={formula}: gives {gpus}/{n}, not a whole number, at gpus={gpus}"
        )
    return gpus // n


def parse_range(value: object, field: str = "gpus") -> tuple[int, int]:
    """``"128-1024"`` -> (128, 1024); ``1024`` or ``"1024"`` -> (1024, 1024)."""
    match = _RANGE.match(str(value))
    if match is None:
        raise ConfigError(f"{field}={value!r}: not a scale or range; allowed: N or LO-HI")
    lo = int(match.group(1))
    hi = int(match.group(2)) if match.group(2) else lo
    if lo <= 0 or hi < lo:
        raise ConfigError(f"{field}={value!r}: range must satisfy 0 < lo <= hi")
    return lo, hi


def power_of_two_scales(lo: int, hi: int) -> list[int]:
    """The listed scales of a range: lo, hi and every power of two between them."""
    scales = {lo, hi}
    p = 1
    while p <= hi:
        if p >= lo:
            scales.add(p)
        p *= 2
    return sorted(scales)
