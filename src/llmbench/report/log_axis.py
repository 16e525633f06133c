"""Log-scale axes whose tick labels read as numbers: ``0.6``, ``2``, ``40``, ``1,500``,
``250,000``, not 6 times 10 to the -1. matplotlib's log formatter still decides which
ticks get a label (fewer where they crowd); only the text differs. Past the range where a
plain number stays short, a label keeps the power of ten (3 times 10 to the 8, with a
multiplication sign and superscripts)."""

from __future__ import annotations

import math

from matplotlib.axes import Axes
from matplotlib.ticker import LogFormatter

SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
PLAIN_MIN, PLAIN_MAX = 1e-3, 1e7
"""Numbers in this range are written out in full (at most 8 characters with commas)."""


def readable_number(value: float) -> str:
    """``value`` as a reader writes it: three significant digits below 1,000, whole
    numbers with thousands separators above."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    exponent = math.floor(math.log10(abs(value)))
    if PLAIN_MIN <= abs(value) < PLAIN_MAX:
        text = f"{value:,.{max(0, 2 - exponent)}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa = f"{value / 10**exponent:.2g}"
    power = f"10{str(exponent).translate(SUPERSCRIPT)}"
    return power if mantissa == "1" else f"{mantissa}\N{MULTIPLICATION SIGN}{power}"


class ReadableLogLabels(LogFormatter):
    """matplotlib's choice of labelled log ticks, written by ``readable_number``."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return readable_number(x) if super().__call__(x, pos) else ""


def log_y(ax: Axes) -> None:
    """A log y axis with readable major and minor tick labels."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ReadableLogLabels(base=10))
    ax.yaxis.set_minor_formatter(ReadableLogLabels(base=10, labelOnlyBase=False))
