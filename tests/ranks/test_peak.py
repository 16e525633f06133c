"""The CPU's GEMM peak (``llmbench.ranks.embedded.peak``), measured for real on small
matrices: what the calibrate job records and CPU MFU is measured against."""

from __future__ import annotations

import torch

from llmbench.ranks.embedded.peak import DTYPES, measure_peak


def test_the_peak_is_recorded_per_dtype_with_how_it_was_measured() -> None:
    result = measure_peak(threads=1, sizes=(32, 64), repeats=2)
    peaks = result["peak_flops_per_device"]
    assert sorted(peaks) == sorted(DTYPES)
    # 2 n^3 FLOPs in a positive time: a finite, positive rate for every dtype
    assert all(0 < flops < float("inf") for flops in peaks.values()), peaks
    assert (result["device"], result["threads"]) == ("cpu", 1)
    assert "up to 64" in result["method"] and "2*n^3" in result["method"]
    assert result["torch_version"] == torch.__version__
