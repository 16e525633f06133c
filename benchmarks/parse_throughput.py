"""Throughput and peak memory of ``llmbench.parsers.parse_log`` on a large NeMo log.

    python benchmarks/parse_throughput.py [--size-gb 1]

Writes a NeMo 2 log of the given size dominated by NCCL INFO noise (init and COLL trace
lines, as with NCCL_DEBUG=INFO) into a temporary folder, then times on that one file:
llmbench's parse (in a child process, whose peak RSS is read with
``getrusage(RUSAGE_CHILDREN)``), ``grep -c train_step_timing``, and a plain line-by-line
Python regex loop. Prints a table and one JSON line; deletes the file.
Targets: >= 0.5x grep, >= 5x the line loop, peak RSS <= 100 MB whatever the size.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS = 50
_NCCL_COLL = (
    "node{n}:{pid}:{tid} [{r}] NCCL INFO AllReduce: opCount {op:x} sendbuff 0x7f2a3c000000 "
    "recvbuff 0x7f2a3c000000 count {count} datatype 7 op 0 root 0 comm 0x55d1c0a0b0c0 "
    "[nranks=16] stream 0x55d1c0d0e0f0\n"
)
_NCCL_INIT = (
    "node{n}:{pid}:{tid} [{r}] NCCL INFO Channel {c:02d}/0 : {r}[{r}] -> {p}[{p}] "
    "[send] via NET/IB/0/GDRDMA\n"
)
_STEP = (
    "[NeMo I 2025-04-11 14:48:45 nemo_logging:393] Training epoch 0, iteration {i}/{last} | "
    "lr: 7.496e-06 | global_batch_size: 128 | global_step: {i} | "
    "peak_memory_usage: 70833405952 | memory_allocated: 44271689728 | "
    "reduced_train_loss: 11.96 | train_step_timing in s: {t} | consumed_samples: 6400\n"
)
_CHILD = """
import json, resource, sys, time
from llmbench.parsers import parse_log
start = time.perf_counter()
summary = parse_log(sys.argv[1]).summary
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, "status": summary.status,
                  "n_iterations": summary.n_iterations}))
"""


def noise_block() -> bytes:
    lines = []
    for k in range(200):
        r = k % 8
        if k % 5 == 0:
            lines.append(
                _NCCL_INIT.format(
                    n=r // 4, pid=1000 + r, tid=2000 + r, r=r, c=k % 32, p=(r + 1) % 8
                )
            )
        else:
            lines.append(
                _NCCL_COLL.format(
                    n=r // 4, pid=1000 + r, tid=2000 + r, r=r, op=k, count=2097152 * (1 + k % 3)
                )
            )
    return "".join(lines).encode()


def write_log(path: Path, size_bytes: int) -> None:
    block = noise_block()
    blocks_per_step = max(1, size_bytes // len(block) // STEPS)
    with open(path, "wb") as fh:
        for i in range(STEPS):
            for _ in range(blocks_per_step):
                fh.write(block)
            fh.write(_STEP.format(i=i, last=STEPS - 1, t=12.0 + (i % 3) * 0.1).encode())


def time_grep(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["grep", "-c", "train_step_timing", str(path)], check=True, capture_output=True)
    return time.perf_counter() - start


def time_line_loop(path: Path) -> float:
    pattern = re.compile(rb"iteration (\d+)/\d+.*train_step_timing in s: ([0-9.eE+-]+)")
    start = time.perf_counter()
    found = 0
    with open(path, "rb") as fh:
        for line in fh:
            if pattern.search(line):
                found += 1
    assert found == STEPS, found
    return time.perf_counter() - start


def time_llmbench(path: Path) -> tuple[float, float]:
    """Parse seconds (measured inside the child) and the child's peak RSS in MB."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], check=True, capture_output=True, text=True
    )
    result = json.loads(proc.stdout)
    assert result["status"] == "success" and result["n_iterations"] == STEPS, result
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return result["seconds"], peak_kb / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gb", type=float, default=1.0)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="llmbench-parse-bench-"))
    try:
        log = tmp / "log-bench.out"
        write_log(log, int(args.size_gb * (1 << 30)))
        size = log.stat().st_size
        time_grep(log)  # warm the page cache so every contender reads from memory
        parse_s, peak_rss_mb = time_llmbench(log)
        grep_s = time_grep(log)
        loop_s = time_line_loop(log)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    gb = size / 1e9
    rows = [("llmbench parse_log", parse_s), ("grep -c", grep_s), ("python line loop", loop_s)]
    print(f"{'contender':<20} {'seconds':>8} {'GB/s':>7}   (file {gb:.2f} GB)")
    for name, seconds in rows:
        print(f"{name:<20} {seconds:8.3f} {gb / seconds:7.2f}")
    result = {
        "file_gb": round(gb, 3),
        "llmbench_gb_per_s": round(gb / parse_s, 3),
        "grep_gb_per_s": round(gb / grep_s, 3),
        "line_loop_gb_per_s": round(gb / loop_s, 3),
        "ratio_vs_grep": round(grep_s / parse_s, 3),
        "ratio_vs_line_loop": round(loop_s / parse_s, 3),
        "peak_rss_mb": round(peak_rss_mb, 1),
        "cpu_count": os.cpu_count(),
    }
    print(
        f"vs grep: {result['ratio_vs_grep']}x (target >= 0.5), vs line loop: "
        f"{result['ratio_vs_line_loop']}x (target >= 5), peak RSS {result['peak_rss_mb']} MB "
        "(target <= 100)"
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
