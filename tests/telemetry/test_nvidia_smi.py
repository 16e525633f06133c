"""nvidia-smi's CSV as the tool prints it: units in the header and the values, [N/A]."""

from __future__ import annotations

import math
from datetime import datetime

from llmbench.telemetry.nvidia_smi import parse_query_csv, query_command, value_number

HEADER = (
    "timestamp, index, power.draw [W], clocks.current.sm [MHz], clocks.current.memory [MHz], "
    "temperature.gpu, utilization.gpu [%]\n"
)
OUTPUT = (
    HEADER
    + """\
2026/11/23 08:00:00.100, 0, 71.23 W, 1980 MHz, 2619 MHz, 35, 98 %
2026/11/23 08:00:00.102, 1, [N/A], 1410 MHz, 2619 MHz, 36, [Not Supported]
2026/11/23 08:00:00.350, 0, 700.50 W, 1
"""
)


def test_query_command_asks_for_the_fields_and_period() -> None:
    command = query_command(100)
    assert command[0] == "nvidia-smi" and "--format=csv" in command and "-lms=100" in command
    assert command[1] == (
        "--query-gpu=timestamp,index,power.draw,clocks.sm,clocks.mem,temperature.gpu,"
        "utilization.gpu"
    )


def test_values_with_units_and_missing_markers() -> None:
    assert value_number("71.23 W") == 71.23
    assert value_number("98 %") == 98.0
    assert math.isnan(value_number("[N/A]")) and math.isnan(value_number("[Not Supported]"))


def test_parse_rows_by_header_and_skip_a_cut_row() -> None:
    rows = list(parse_query_csv(OUTPUT.splitlines(keepends=True), "node1"))
    when = datetime(2026, 11, 23, 8, 0, 0, 100000).timestamp()
    by = {(r.device, r.metric): r for r in rows}
    assert by[("gpu0", "power_w")].value == 71.23 and by[("gpu0", "power_w")].time_unix_s == when
    assert by[("gpu0", "sm_clock_mhz")].value == 1980
    assert by[("gpu0", "mem_clock_mhz")].value == 2619
    assert by[("gpu0", "temperature_c")].value == 35
    assert by[("gpu0", "util")].value == 0.98
    assert math.isnan(by[("gpu1", "power_w")].value) and math.isnan(by[("gpu1", "util")].value)
    assert {r.node for r in rows} == {"node1"} and len(rows) == 10  # the cut row is dropped
