"""Step lines of NeMo 2, Megatron(-Bridge) and MaxText, read into ``StepRecord``s.

All three formats are ``name: value`` fields separated by ``|`` (NeMo, Megatron) or ``,``
(MaxText) after an iteration marker; fields may come in any order, numbers in plain or
scientific notation, and anything may precede the marker (srun, NeMo-Run, glog, timestamps;
ANSI colour codes are removed before a line gets here). A NeMo line's key is its
``global_step`` when it has one: the printed iteration restarts at every epoch.

A number is read only when its field ends where the number ends: after it come spaces and
then ``|``, a ``,`` that does not go on with a digit (MaxText's separator, not a decimal
comma) or the end of the line; Megatron's running mean may sit between (``100.0/101.5``,
``496.3 (avg 496.1)``). ``12\x00.3`` or ``12,3`` is not 12: such a value is not read (NaN)
and the record names it in ``malformed``, so the summary can say why.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from llmbench.parsers.vocabulary import Framework

_NUM = rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?i:nan|inf(?:inity)?)"
# After a field's number, the separator: `|`, a `,` that does not go on with a digit (not a
# decimal comma), the end; Megatron's running mean may come first (`100.0/101.5`,
# `496.3 (avg 496.1)`). The plain separator is tried first: most fields end so.
_SEPARATOR = rb"\s*(?:\||$|,(?![\d.]))"
_FIELD_END = _SEPARATOR + rb"|(?:/(?:" + _NUM + rb"))?(?:\s*\([^()|]*\))?" + _SEPARATOR
# name, then the number when it is the whole field, else the malformed field up to its
# separator (one pass; a number cut short never matches the first branch)
_FIELD = re.compile(
    rb"(?:^|[|,])\s*([A-Za-z_][\w ./()\-]*?)\s*:\s*"
    rb"(?:(" + _NUM + rb")(?=" + _FIELD_END + rb")|((?:" + _NUM + rb")(?:[^|,]|,(?=[\d.])){0,24}))"
)
_NEMO_ITERATION = re.compile(rb"\biteration\s+(\d+)\s*/\s*(\d+)")
_MEGATRON_ITERATION = re.compile(rb"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_MAXTEXT_STEP = re.compile(rb"completed step:\s*(\d+)")
_GLOBAL_STEP = re.compile(rb"(?:^|\|)\s*global_step\s*:\s*(\d+)(?:\.0*)?\s*(?:\||$)")
_BRIDGE_STEP_TIME = re.compile(
    rb"Step Time\s*:\s*(" + _NUM + rb")\s*s\b(?:.*?GPU utilization\s*:\s*(" + _NUM + rb"))?"
)
_NEMO_TIMING_LIST = re.compile(rb"train_step_timing in s\s*:\s*\[([^\]\n]*)\]?")
_MAX_ITERATION = 10**12  # anything above is garbage, not a step counter

# Field names (lower case) -> (column, factor to the column's unit).
FIELD_COLUMNS: dict[bytes, tuple[str, float]] = {
    b"train_step_timing in s": ("step_time_s", 1.0),
    b"elapsed time per iteration (ms)": ("step_time_s", 1e-3),
    b"elapsed time per iteration (s)": ("step_time_s", 1.0),
    b"seconds": ("step_time_s", 1.0),
    b"reduced_train_loss": ("loss", 1.0),
    b"lm loss": ("loss", 1.0),
    b"loss": ("loss", 1.0),
    b"tflops_per_gpu": ("tflops_per_gpu", 1.0),
    b"throughput per gpu (tflop/s/gpu)": ("tflops_per_gpu", 1.0),
    b"compute per gpu (tflop/s/gpu)": ("tflops_per_gpu", 1.0),
    b"tflop/s/device": ("tflops_per_gpu", 1.0),
    b"tokens_per_sec_per_gpu": ("tokens_per_s_per_gpu", 1.0),
    b"tokens/s/device": ("tokens_per_s_per_gpu", 1.0),
    b"grad norm": ("grad_norm", 1.0),
    b"grad_norm": ("grad_norm", 1.0),
    b"lr": ("lr", 1.0),
    b"learning rate": ("lr", 1.0),
    b"global_batch_size": ("global_batch_size", 1.0),
    b"global batch size": ("global_batch_size", 1.0),
    b"peak_memory_usage": ("peak_memory_bytes", 1.0),
    b"memory_allocated": ("memory_allocated_bytes", 1.0),
    b"val_loss": ("val_loss", 1.0),
    b"number of skipped iterations": ("skipped_iterations", 1.0),
    b"number of nan iterations": ("nan_iterations", 1.0),
}

VALUE_COLUMNS: tuple[str, ...] = (
    "step_time_s",
    "loss",
    "tflops_per_gpu",
    "tokens_per_s_per_gpu",
    "grad_norm",
    "lr",
    "global_batch_size",
    "peak_memory_bytes",
    "memory_allocated_bytes",
    "val_loss",
    "skipped_iterations",
    "nan_iterations",
)
STEP_COLUMNS: tuple[str, ...] = ("iteration", *VALUE_COLUMNS)


@dataclass
class StepRecord:
    """One step line: the iteration as the framework numbers it and the values logged."""

    iteration: int
    last_iteration: int = -1  # the `N` of `iteration k/N`; -1 when not logged
    values: dict[str, float] = field(default_factory=dict)
    malformed: dict[str, str] = field(default_factory=dict)  # column -> the field as logged


def _to_float(raw: bytes) -> float:
    try:
        return float(raw)
    except (ValueError, OverflowError):
        return math.nan


def _fields(line: bytes) -> tuple[dict[str, float], dict[str, str]]:
    """The known fields' values, and the known fields whose number is not the whole field
    (their value NaN), shown as logged with bytes escaped."""
    values: dict[str, float] = {}
    malformed: dict[str, str] = {}
    for name, raw, cut_short in _FIELD.findall(line):
        column = FIELD_COLUMNS.get(name.strip().lower())
        if column is None:
            continue
        if raw:
            values[column[0]] = _to_float(raw) * column[1]
        else:
            values[column[0]] = math.nan
            malformed[column[0]] = repr(name.strip() + b": " + cut_short.rstrip())[2:-1]
    return values, malformed


def _iteration(raw: bytes) -> int | None:
    if len(raw) > len(str(_MAX_ITERATION)):  # also keeps int() off 5,000-digit strings
        return None
    value = int(raw)
    return value if value <= _MAX_ITERATION else None


def parse_nemo_step(line: bytes) -> StepRecord | None:
    """``Training epoch 0, iteration 49/49 | ... | train_step_timing in s: 12.39 | ...``;
    keyed by ``global_step`` when logged (``Training epoch 1, iteration 0/19 | ... |
    global_step: 19``), else by the printed iteration."""
    match = _NEMO_ITERATION.search(line)
    if match is None:
        return None
    iteration = _iteration(match.group(1))
    fields = line[match.end() :]
    values, malformed = _fields(fields)
    if iteration is None or "step_time_s" not in values:
        return None
    if (step := _GLOBAL_STEP.search(fields)) is not None:
        iteration = _iteration(step.group(1))
        if iteration is None:
            return None
    return StepRecord(iteration, _iteration(match.group(2)) or -1, values, malformed)


def parse_nemo_timing_list(line: bytes) -> list[float] | None:
    """NeMo's performance callback: ``train_step_timing in s: [11.85, 6.98, ...]``."""
    match = _NEMO_TIMING_LIST.search(line)
    if match is None:
        return None
    return [_to_float(item) for item in match.group(1).split(b",") if item.strip()]


def parse_megatron_step(line: bytes) -> StepRecord | None:
    """``iteration 50/ 50 | ... | elapsed time per iteration (ms): 9089.0 | ...``."""
    match = _MEGATRON_ITERATION.search(line)
    if match is None:
        return None
    iteration = _iteration(match.group(1))
    values, malformed = _fields(line[match.end() - 1 :])
    if iteration is None or "step_time_s" not in values:
        return None
    return StepRecord(iteration, _iteration(match.group(2)) or -1, values, malformed)


def parse_bridge_step_time(line: bytes) -> dict[str, float] | None:
    """Megatron-Bridge's ``Step Time : 9.09s GPU utilization: 663.5MODEL_TFLOP/s/GPU``."""
    match = _BRIDGE_STEP_TIME.search(line)
    if match is None:
        return None
    values = {"step_time_s": _to_float(match.group(1))}
    if match.group(2) is not None:
        values["tflops_per_gpu"] = _to_float(match.group(2))
    return values


def parse_maxtext_step(line: bytes) -> StepRecord | None:
    """``completed step: 49, seconds: 7.908, TFLOP/s/device: 460.480, ..., loss: 0.000``."""
    match = _MAXTEXT_STEP.search(line)
    if match is None:
        return None
    iteration = _iteration(match.group(1))
    values, malformed = _fields(line[match.end() :])
    if iteration is None or "step_time_s" not in values:
        return None
    return StepRecord(iteration, -1, values, malformed)


STEP_PARSERS = {
    Framework.NEMO2: parse_nemo_step,
    Framework.MEGATRON: parse_megatron_step,
    Framework.MAXTEXT: parse_maxtext_step,
}
