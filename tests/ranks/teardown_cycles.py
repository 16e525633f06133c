"""Open, use and tear down a gloo group with a DDP model many times in one process.

Run under torchrun with 2 ranks: ``python -m tests.ranks.teardown_cycles safe|unsafe N``.
``safe`` goes through ``llmbench.ranks.embedded.process_group``; ``unsafe`` is the order that
deadlocked (the group destroyed while the DDP reducer still holds it), kept as the control
that shows the test can see the deadlock.
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist

from llmbench.ranks.embedded.process_group import GroupHolders, process_group


def steps(model: torch.nn.Module, rank: int) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(8, 64)).sum()
        loss.backward()
        optimizer.step()
        total = loss.detach().clone()  # a tensor Python has seen, reduced on a gloo worker
        dist.all_reduce(total)


def safe_cycle(rank: int, world: int, store: dist.Store) -> None:
    with process_group(rank, world, store) as holders:
        _safe_body(rank, holders)


def _safe_body(rank: int, holders: GroupHolders) -> None:
    model = holders.hold(torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 64)))
    steps(model, rank)


def unsafe_cycle(rank: int, world: int, store: dist.Store) -> None:
    dist.init_process_group("gloo", rank=rank, world_size=world, store=store)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 64))
    steps(model, rank)
    dist.barrier()
    dist.destroy_process_group()
    # returning frees the DDP reducer, which now holds the last reference to the group


def main() -> None:
    mode, cycles = sys.argv[1], int(sys.argv[2])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]) + 1
    base = dist.TCPStore(host, port, world, rank == 0)
    cycle = safe_cycle if mode == "safe" else unsafe_cycle
    for i in range(cycles):
        cycle(rank, world, dist.PrefixStore(f"cycle{i}", base))
        print(f"rank {rank} cycle {i} done", flush=True)
    print(f"rank {rank} all {cycles} cycles done", flush=True)


if __name__ == "__main__":
    main()
