"""nvidia-smi as a telemetry source: the query command and a parser for the CSV it prints.

Format (``nvidia-smi --help-query-gpu``; NVIDIA's knowledge-base article "Useful
nvidia-smi queries", answer 3751, shows the same shape)::

    timestamp, index, power.draw [W], clocks.current.sm [MHz], temperature.gpu, utilization.gpu [%]
    2019/08/23 14:54:47.307, 0, 208.36 W, 1545 MHz, 45, 98 %

- the header names each field by its full name (``clocks.sm`` is printed as
  ``clocks.current.sm``), followed by its unit in brackets; fields without unit
  (``temperature.gpu``, in degrees C) have none;
- values carry the unit after a space; a value the GPU cannot give is ``[N/A]`` or
  ``[Not Supported]`` (other bracketed words exist, e.g. ``[Unknown Error]``): all of them
  read as NaN;
- ``timestamp`` is the node's local time, ``YYYY/MM/DD HH:MM:SS.mmm``;
- with ``-lms <period>`` one row per GPU per period, until the process is stopped.

``index`` is queried besides the issue's field list: without it, rows of different GPUs
could only be told apart by their order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from datetime import datetime

from llmbench.telemetry.samples import Sample

QUERY_FIELDS = (
    "timestamp",
    "index",
    "power.draw",
    "clocks.sm",
    "clocks.mem",
    "temperature.gpu",
    "utilization.gpu",
)
HEADER_METRICS = {
    "power.draw": ("power_w", 1.0),
    "clocks.current.sm": ("sm_clock_mhz", 1.0),
    "clocks.sm": ("sm_clock_mhz", 1.0),
    "clocks.current.memory": ("mem_clock_mhz", 1.0),
    "clocks.mem": ("mem_clock_mhz", 1.0),
    "temperature.gpu": ("temperature_c", 1.0),
    "utilization.gpu": ("util", 0.01),
}
"""Header field (unit stripped) -> (sample metric, factor to its unit)."""
TIMESTAMP_FORMAT = "%Y/%m/%d %H:%M:%S.%f"


def query_command(period_ms: int) -> list[str]:
    """The sampler's nvidia-smi command line: one CSV row per GPU every ``period_ms``."""
    return [
        "nvidia-smi",
        f"--query-gpu={','.join(QUERY_FIELDS)}",
        "--format=csv",
        f"-lms={period_ms}",
    ]


def field_name(header_cell: str) -> str:
    """``power.draw [W]`` -> ``power.draw``."""
    return header_cell.split("[", 1)[0].strip()


def value_number(cell: str) -> float:
    """``71.23 W`` -> 71.23, ``98 %`` -> 98.0, ``[N/A]`` / ``[Not Supported]`` -> NaN."""
    text = cell.strip()
    if not text or text.startswith("["):
        return math.nan
    try:
        return float(text.split()[0])
    except ValueError:
        return math.nan


def parse_timestamp(cell: str) -> float:
    """nvidia-smi's local-time timestamp as Unix seconds (this node's time zone)."""
    try:
        return datetime.strptime(cell.strip(), TIMESTAMP_FORMAT).timestamp()
    except ValueError:
        return math.nan


def parse_query_csv(lines: Iterable[str], node: str) -> Iterator[Sample]:
    """Samples from ``nvidia-smi --query-gpu=... --format=csv`` output (header first; a
    repeated header, as a restarted nvidia-smi prints, is read again)."""
    fields: list[str] = []
    for raw in lines:
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if cells[0] == "timestamp":
            fields = [field_name(c) for c in cells]
            continue
        if not fields or len(cells) != len(fields):
            continue  # no header yet, or a row cut short
        row = dict(zip(fields, cells, strict=True))
        when = parse_timestamp(row.get("timestamp", ""))
        if math.isnan(when):
            continue
        device = f"gpu{row['index']}" if "index" in row else "gpu"
        for name, cell in row.items():
            if name in HEADER_METRICS:
                metric, factor = HEADER_METRICS[name]
                yield Sample(when, node, "nvidia-smi", device, metric, value_number(cell) * factor)
