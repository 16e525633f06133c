"""All-reduce and alltoall bandwidth between the ranks of one node, measured for real with
gloo (CPU ranks) or NCCL (one rank per GPU, for the GPU proof kit where nccl-tests is not
installed).

Figures as nccl-tests defines them (nccl-tests doc/PERFORMANCE.md): for a message of S
bytes taking t seconds, algorithm bandwidth algbw = S / t and bus bandwidth busbw = algbw
x 2 (n - 1) / n for an all-reduce over n ranks, algbw x (n - 1) / n for an alltoall: the
figure comparable across rank counts and with the hardware's link speed.

A ``slow`` fault of the embedded trainer's injector (``LLMBENCH_FAULT=slow@0:preflight_<node>``)
delays every timed collective on that node by ``SLOW_STEP_S``: the measurement of a
degraded node, for tests of the gate.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from llmbench.ranks.embedded.process_group import process_group
from llmbench.ranks.embedded.train import FAULT_ENV, Fault, fault_for, inject

DEFAULT_SIZES = tuple(8 * 8**k for k in range(8))
"""8 B to 16 MiB, a factor of 8 apart (nccl-tests' ``-b 8 -e <max> -f 8``)."""


COLLECTIVES = ("all_reduce", "alltoall")


def bus_factor(ranks: int, collective: str = "all_reduce") -> float:
    """busbw / algbw over ``ranks`` ranks: 2 (n - 1) / n for an all-reduce, (n - 1) / n
    for an alltoall (nccl-tests doc/PERFORMANCE.md)."""
    share = (ranks - 1) / ranks
    return 2 * share if collective == "all_reduce" else share


@dataclass(frozen=True)
class AllReducePoint:
    size_bytes: int
    time_s: float  # mean over the timed iterations
    algbw_gbps: float  # GB/s, 1e9 bytes
    busbw_gbps: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fault_target(node: str) -> str:
    """What a preflight fault's run glob is matched against."""
    return f"preflight_{node}"


BACKENDS = ("gloo", "nccl")


@contextmanager
def _group(rank: int, ranks: int, store: Any, backend: str) -> Iterator[None]:
    """The ranks' process group; also for one rank, where ``process_group`` opens none:
    an NCCL all-reduce on a single GPU still proves that NCCL starts and runs."""
    import torch.distributed as dist  # heavy optional dependency (the embedded extra)

    if ranks > 1:
        with process_group(rank, ranks, store=store, backend=backend):
            yield
        return
    dist.init_process_group(backend, rank=0, world_size=1, store=store)
    try:
        yield
    finally:
        dist.destroy_process_group()


def rank_main(
    rank: int,
    ranks: int,
    port: int,
    sizes: Sequence[int],
    iterations: int,
    node: str,
    backend: str = "gloo",
    collective: str = "all_reduce",
) -> list[AllReducePoint]:
    """One rank of the test (its own process); every rank returns the same timings. With
    ``nccl`` each rank drives GPU ``rank`` of this node."""
    # heavy optional dependency (in the training image or venv): imported only here
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
    fault = fault_for(fault_target(node), os.environ.get(FAULT_ENV))
    store = dist.TCPStore("127.0.0.1", port, ranks, is_master=rank == 0)
    points = []
    with _group(rank, ranks, store, backend):
        for size in sizes:
            fault_here = fault if rank == 0 else None
            points.append(
                _time_one(torch, dist, size, iterations, ranks, fault_here, device, collective)
            )
    return points


def _time_one(
    torch: Any,
    dist: Any,
    size: int,
    iterations: int,
    ranks: int,
    fault: Fault | None,
    device: Any,
    collective: str = "all_reduce",
) -> AllReducePoint:
    # an alltoall splits the buffer evenly between the ranks
    elements = (
        max(2, size // 4) if collective == "all_reduce" else max(ranks, size // 4 // ranks * ranks)
    )
    tensor = torch.ones(elements, dtype=torch.float32, device=device)
    received = torch.empty_like(tensor)

    def call() -> None:
        if collective == "all_reduce":
            dist.all_reduce(tensor)
        else:
            dist.all_to_all_single(received, tensor)

    def finish() -> None:  # NCCL returns once the collective is queued on the GPU
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    call()  # warm-up: connections, buffers
    finish()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iterations):
        inject(fault, 0)  # a slowed node: the delay sits inside the timed calls
        call()
    finish()
    elapsed = (time.perf_counter() - start) / iterations
    nbytes = tensor.numel() * 4
    algbw = nbytes / elapsed / 1e9
    return AllReducePoint(nbytes, elapsed, algbw, algbw * bus_factor(ranks, collective))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rank_command(
    rank: int,
    ranks: int,
    port: int,
    node: str,
    iterations: int,
    sizes: Sequence[int],
    out: Path,
    backend: str = "gloo",
    collective: str = "all_reduce",
) -> list[str]:
    """One rank's process: this module's ``main``, like a launcher would start it."""
    args = {
        "--rank": rank, "--ranks": ranks, "--port": port, "--node": node,
        "--iterations": iterations, "--sizes": ",".join(map(str, sizes)), "--out": out,
        "--backend": backend, "--collective": collective,
    }  # fmt: skip
    return [sys.executable, "-m", "llmbench.preflight.allreduce"] + [
        str(word) for pair in args.items() for word in pair
    ]


def measure_allreduce(
    node: str,
    ranks: int = 2,
    sizes: Sequence[int] = DEFAULT_SIZES,
    iterations: int = 5,
    timeout_s: float = 300,
    backend: str = "gloo",
    collective: str = "all_reduce",
) -> list[AllReducePoint]:
    """All-reduce (or alltoall) of float32 buffers of ``sizes`` bytes between ``ranks``
    local processes (gloo over loopback, or NCCL with one GPU per rank), ``iterations``
    timed calls each after one warm-up. Rank 0's timings are returned; a rank that fails
    or outlives ``timeout_s`` fails the test (``RuntimeError``)."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rank0.json"
        procs = [
            subprocess.Popen(
                rank_command(r, ranks, port, node, iterations, sizes, out, backend, collective)
            )
            for r in range(ranks)
        ]
        deadline = time.monotonic() + timeout_s
        codes = []
        for proc in procs:
            try:
                codes.append(proc.wait(timeout=max(1.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                codes.append(None)
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if any(code != 0 for code in codes) or not out.exists():
            raise RuntimeError(f"all-reduce ranks ended with {codes} (None: timed out)")
        return [AllReducePoint(**point) for point in json.loads(out.read_text())]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one rank of the preflight all-reduce test")
    for name in ("--rank", "--ranks", "--port", "--iterations"):
        parser.add_argument(name, type=int, required=True)
    parser.add_argument("--node", required=True)
    parser.add_argument("--sizes", required=True, help="message sizes in bytes, comma-separated")
    parser.add_argument("--out", type=Path, required=True, help="rank 0 writes the timings here")
    parser.add_argument("--backend", choices=BACKENDS, default="gloo")
    parser.add_argument("--collective", choices=COLLECTIVES, default="all_reduce")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    points = rank_main(
        args.rank,
        args.ranks,
        args.port,
        sizes,
        args.iterations,
        args.node,
        args.backend,
        args.collective,
    )
    if args.rank == 0:
        args.out.write_text(json.dumps([p.as_dict() for p in points]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
