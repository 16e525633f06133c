"""The NCCL transport reader on the bad-input probe's large debug files: a 300 MB file of
IB channel lines with one socket channel at the end (T1), one 400 MB line without a
newline beside a socket file (T2), 50 MB of random bytes beside a socket file (T3).

Each case runs ``read_transport`` in a child process and records its wall time, its peak
resident memory and whether the socket channel was found; ``grep -c`` over the same
bytes, timed in the same run, is the baseline. Target: every case finds the sockets and
stays under ``MAX_RSS_MB`` (the reader works on bounded windows: its memory must not
grow with the file or the line). Prints a table and one JSON line; exits 1 when a
target is missed (``--no-fail`` to report only).

    python benchmarks/transport_reader.py [--scale 1.0] [--no-fail]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MAX_RSS_MB = 100.0
SOCKET = (
    "gpu1:1234:1300 [0] NCCL INFO Using network Socket\n"
    "gpu1:1234:1300 [0] NCCL INFO comm 0x55d0 rank 0 nRanks 16 nNodes 2 localRanks 8 "
    "localRank 0 MNNVL 0\n"
    "gpu1:1234:1300 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/Socket/0\n"
)
IB = "gpu1:1234:1300 [0] NCCL INFO Channel 01/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
CHILD = (
    "import json, resource, sys, time\n"
    "from llmbench.parsers.transport import read_transport\n"
    "t = time.perf_counter()\n"
    "r = read_transport(sys.argv[1:], nodes=2, fabric='ib')\n"
    "print(json.dumps({'s': time.perf_counter() - t, 'socket': r.socket_inter_node,\n"
    "  'rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
)


def _write(path: Path, unit: bytes, size: int, tail: bytes = b"") -> None:
    with open(path, "wb") as fh:
        block = unit * max(1, (1 << 20) // len(unit))
        written = 0
        while written < size:
            fh.write(block)
            written += len(block)
        fh.write(tail)


def cases(folder: Path, scale: float) -> dict[str, list[Path]]:
    socket_file = folder / "socket.log"
    socket_file.write_text(SOCKET)
    t1 = folder / "t1-ib-channels.log"
    _write(t1, IB.encode(), int(300e6 * scale), SOCKET.encode())
    t2 = folder / "t2-one-line.log"
    _write(t2, b"x" * 4096, int(400e6 * scale))
    t3 = folder / "t3-random.log"
    with open(t3, "wb") as fh:
        for _ in range(max(1, int(50 * scale))):
            fh.write(os.urandom(1 << 20))
    return {"T1": [t1], "T2": [t2, socket_file], "T3": [t3, socket_file]}


def measure(files: list[Path]) -> dict:
    child = subprocess.run(
        [sys.executable, "-c", CHILD, *map(str, files)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result = json.loads(child.stdout)
    start = time.perf_counter()
    subprocess.run(["grep", "-c", "via NET", *map(str, files)], capture_output=True, check=False)
    result["grep_s"] = time.perf_counter() - start
    result["mb"] = sum(f.stat().st_size for f in files) / 1e6
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="file sizes x this")
    parser.add_argument("--no-fail", action="store_true")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, files in cases(Path(tmp), args.scale).items():
            results[name] = measure(files)
    print("| case | MB | llmbench s | MB/s | grep s | peak RSS MB | sockets found |")
    print("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['mb']:.0f} | {r['s']:.2f} | {r['mb'] / r['s']:.0f} | "
              f"{r['grep_s']:.2f} | {r['rss_mb']:.1f} | {r['socket']} |")  # fmt: skip
    print(json.dumps({"benchmark": "transport_reader", "results": results}))
    missed = [n for n, r in results.items() if not r["socket"] or r["rss_mb"] > MAX_RSS_MB]
    if missed:
        print(f"missed: {', '.join(missed)} (sockets found, peak RSS <= {MAX_RSS_MB} MB)")
    return 1 if missed and not args.no_fail else 0


if __name__ == "__main__":
    sys.exit(main())
