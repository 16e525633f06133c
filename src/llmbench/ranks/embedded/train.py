"""Train the tiny Llama for real on the CPU, one process per rank, logging NeMo 2 step lines.

Started by the rendered ``launch.sh`` through ``torchrun`` (local) or ``srun`` (Slurm);
rank 0 prints one line per iteration in NeMo 2's format so that the same parser reads the
embedded default and real NeMo logs.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import math
import os
import platform
import resource
import sys
import time
import traceback
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from llmbench.core.runspec import RunSpec
from llmbench.ranks.embedded.process_group import GroupHolders, process_group
from llmbench.ranks.stack_dumps import register_stack_dump
from llmbench.ranks.step_clock import open_step_clock, record_step

DATA_POOL_SEQUENCES = 16
"""Synthetic tokens come from a fixed pool, so the loss falls as the model memorises it."""
PEAK_LR = 3e-3
WARMUP_STEPS = 5
FAULT_ENV = "LLMBENCH_FAULT"
"""Fault injection for tests of failure handling:
``<kind>@<iteration>[:<run-id glob>[:<attempt>]]`` with kind ``oom`` (raises the error a
CUDA OOM raises), ``exception``, ``nan`` (the loss becomes NaN), ``hang`` (sleeps until
killed) or ``slow`` (every step from that iteration on takes ``SLOW_STEP_S`` longer, or
``<seconds>`` longer when written ``slow=<seconds>``); with
``<attempt>``, only that attempt of the run (``LLMBENCH_ATTEMPT``) fails. A ``hang`` at an
iteration equal to the number of steps strikes after the last step (a run that finished but
does not exit). Several faults, separated by ``,``, each strike their own runs: the first
that targets this run (and attempt) applies, so one sweep can hold several failures."""
FAULT_KINDS = ("oom", "exception", "nan", "hang", "slow")
HANG_LIMIT_S = 600
SLOW_STEP_S = 0.1


@dataclass(frozen=True)
class Fault:
    kind: str
    iteration: int
    delay_s: float = SLOW_STEP_S


def fault_for(run_id: str, value: str | None, attempt: int | None = None) -> Fault | None:
    """The fault ``LLMBENCH_FAULT`` asks for in this run (and attempt), if any. Every fault
    of the list is checked, so a malformed one fails every run, not only the runs it names."""
    faults = [_one_fault(run_id, one, attempt) for one in (value or "").split(",") if one]
    return next((fault for fault in faults if fault is not None), None)


def _one_fault(run_id: str, value: str, attempt: int | None) -> Fault | None:
    """One fault of the list, if it targets this run (and attempt)."""
    spec, _, target = value.partition(":")
    pattern, _, only_attempt = target.partition(":")
    kind, _, iteration = spec.partition("@")
    kind, _, delay = kind.partition("=")
    if (
        kind not in FAULT_KINDS
        or not iteration.isdigit()
        or (delay and (kind != "slow" or not _is_positive_number(delay)))
        or (only_attempt and not only_attempt.isdigit())
    ):
        raise ValueError(
            f"{FAULT_ENV}={value!r}: expected <kind>@<iteration>[:<run glob>[:<attempt>]], "
            f"kind one of {', '.join(FAULT_KINDS)} (slow=<seconds> for a slow step), "
            "several separated by ','"
        )
    if only_attempt and int(only_attempt) != attempt:
        return None
    if pattern and not fnmatch.fnmatchcase(run_id, pattern):
        return None
    return Fault(kind, int(iteration), float(delay) if delay else SLOW_STEP_S)


def _is_positive_number(text: str) -> bool:
    try:
        return 0 < float(text) < HANG_LIMIT_S
    except ValueError:
        return False


def inject(fault: Fault | None, iteration: int) -> bool:
    """Raise or hang at the fault's iteration, or slow every step from it on; True when
    the loss should become NaN."""
    if fault is None:
        return False
    if fault.kind == "slow":  # inside the timed step: a degraded node, not a failure
        if iteration >= fault.iteration:
            time.sleep(fault.delay_s)
        return False
    if iteration != fault.iteration:
        return False
    if fault.kind == "oom":
        # heavy optional dependency (the embedded extra): imported only when used
        import torch

        raise torch.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 2.00 GiB (injected by llmbench for a test)"
        )
    if fault.kind == "exception":
        raise RuntimeError("injected failure (llmbench test)")
    if fault.kind == "hang":  # until killed, but never longer than HANG_LIMIT_S
        time.sleep(HANG_LIMIT_S)
        raise RuntimeError(f"injected hang ended after {HANG_LIMIT_S} s (llmbench test)")
    return True


@dataclass(frozen=True)
class RankInfo:
    rank: int
    world_size: int
    local_rank: int


def rank_info(env: dict[str, str] | os._Environ[str] = os.environ) -> RankInfo:
    """Rank from torchrun's variables, else from srun's (one task per rank)."""
    if "RANK" in env:
        return RankInfo(int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", 0)))
    if "SLURM_PROCID" in env:
        return RankInfo(
            int(env["SLURM_PROCID"]), int(env["SLURM_NTASKS"]), int(env.get("SLURM_LOCALID", 0))
        )
    return RankInfo(0, 1, 0)


def learning_rate(step: int, steps: int) -> float:
    """Linear warm-up, then cosine decay to 10 % of the peak."""
    if step < WARMUP_STEPS:
        return PEAK_LR * (step + 1) / WARMUP_STEPS
    progress = (step - WARMUP_STEPS) / max(1, steps - WARMUP_STEPS)
    return PEAK_LR * (0.1 + 0.45 * (1 + math.cos(math.pi * progress)))


def nemo_step_line(
    iteration: int, steps: int, lr: float, gbs: int, loss: float, step_time_s: float, peak_mem: int
) -> str:
    """One iteration in NeMo 2's ``Training epoch`` format (iterations counted from 0)."""
    return (
        f"Training epoch 0, iteration {iteration}/{steps - 1} | lr: {lr:.4g} | "
        f"global_batch_size: {gbs} | global_step: {iteration} | "
        f"peak_memory_usage: {peak_mem} | reduced_train_loss: {loss:.4f} | "
        f"train_step_timing in s: {step_time_s:.6f} | consumed_samples: {(iteration + 1) * gbs}"
    )


def train(spec: RunSpec, info: RankInfo, cuda: bool) -> None:
    """Train ``spec.steps`` iterations on this rank (on its local GPU with NCCL when
    ``cuda``, else on CPU cores with gloo); the process group (if any) is torn down only
    after every object that uses it is gone (``process_group``)."""
    # heavy optional dependency (the embedded extra): imported only when used
    import torch

    torch.set_num_threads(spec.threads_per_rank)
    if cuda:  # one process per local GPU
        torch.cuda.set_device(info.local_rank)
    with process_group(info.rank, info.world_size, backend="nccl" if cuda else "gloo") as holders:
        _train_steps(spec, info, holders, cuda)


def _train_steps(spec: RunSpec, info: RankInfo, holders: GroupHolders, cuda: bool) -> None:
    # The model, optimizer and DDP reducer are locals here, so they are released when this
    # function returns, before the process group is destroyed.
    import torch

    # the model needs torch at module level: imported here, like torch itself
    from llmbench.ranks.embedded.llama import LlamaForCausalLM, LlamaShape

    distributed = info.world_size > 1
    device = torch.device("cuda", info.local_rank) if cuda else torch.device("cpu")
    torch.manual_seed(1234)  # identical initial weights on every rank, as DDP expects
    model = LlamaForCausalLM(LlamaShape.of(spec.model)).to(device)
    if distributed:
        ids = [device.index] if device.type == "cuda" else None
        model = holders.hold(torch.nn.parallel.DistributedDataParallel(model, device_ids=ids))
    optimizer = torch.optim.AdamW(model.parameters(), lr=PEAK_LR, weight_decay=0.01)
    pool = torch.randint(
        0,
        spec.model["vocab"],
        (DATA_POOL_SEQUENCES, spec.seq_len),
        generator=torch.Generator().manual_seed(0),
    ).to(device)
    autocast = (
        torch.autocast(device.type, dtype=torch.bfloat16)
        if spec.dtype == "bf16"
        else contextlib.nullcontext()
    )
    attempt = os.environ.get("LLMBENCH_ATTEMPT", "")
    fault = fault_for(
        spec.run_id, os.environ.get(FAULT_ENV), int(attempt) if attempt.isdigit() else None
    )
    clock = open_step_clock(info.rank)
    with clock if clock is not None else contextlib.nullcontext():
        _steps(spec, info, model, optimizer, pool, autocast, fault, clock)
    inject(fault, spec.steps)


def _steps(
    spec: RunSpec,
    info: RankInfo,
    model: typing.Any,
    optimizer: typing.Any,
    pool: typing.Any,
    autocast: typing.Any,
    fault: Fault | None,
    clock: typing.TextIO | None,
) -> None:
    # heavy optional dependency (in the training image or venv): imported only here
    import torch
    import torch.distributed as dist

    distributed = info.world_size > 1
    mbs, ga = spec.micro_batch_size, spec.parallelism["ga"]
    device = pool.device
    for step in range(spec.steps):
        wall_start = time.time()
        start = time.perf_counter()
        make_nan = inject(fault, step)
        lr = learning_rate(step, spec.steps)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
        loss_sum = torch.zeros((), device=device)
        for micro in range(ga):
            first = ((step * ga + micro) * info.world_size + info.rank) * mbs
            batch = pool[torch.arange(first, first + mbs, device=device) % DATA_POOL_SEQUENCES]
            sync = micro == ga - 1 or not distributed
            with contextlib.nullcontext() if sync else model.no_sync(), autocast:
                loss = model(batch, labels=batch) / ga
            loss.backward()
            loss_sum += loss.detach().float()
        optimizer.step()
        if make_nan:
            loss_sum = loss_sum * float("nan")
        if distributed:
            dist.all_reduce(loss_sum)
            loss_sum /= info.world_size
        if device.type == "cuda":  # the step ends when the GPU is done with it
            torch.cuda.synchronize(device)
        step_time_s = time.perf_counter() - start
        if clock is not None:
            record_step(clock, step, wall_start, wall_start + step_time_s)
        if info.rank == 0:
            peak_mem = (
                torch.cuda.max_memory_allocated(device)
                if device.type == "cuda"
                else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            )
            print(
                nemo_step_line(
                    step,
                    spec.steps,
                    lr,
                    spec.global_batch_size,
                    float(loss_sum),
                    step_time_s,
                    peak_mem,
                ),
                flush=True,
            )


def exit_now(code: int) -> NoReturn:
    """Flush what this rank printed, then leave without running destructors: after a
    failure, objects kept alive by the traceback may still hold the process group, and
    their destructors can block on a peer that is gone."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_rank(rank: int, work: Callable[[], None]) -> int:
    """Run one rank's training: its stacks dumped on request (``stack_dumps``), and after
    an exception its traceback and an exit without destructors (``exit_now``)."""
    register_stack_dump(rank)
    try:
        work()
    except Exception:
        traceback.print_exc()
        exit_now(1)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec", required=True, help="run_spec.json written by llmbench")
    parser.add_argument(
        "--cuda", action="store_true", help="one local GPU per rank, NCCL (default: CPU, gloo)"
    )
    args = parser.parse_args(argv)
    with open(args.spec) as fh:
        spec = RunSpec.from_dict(json.load(fh))
    info = rank_info()
    node = os.environ.get("SLURMD_NODENAME") or platform.node()
    print(
        f"llmbench rank {info.rank}/{info.world_size} pid {os.getpid()} on node {node}",
        flush=True,
    )
    if info.rank == 0:
        print(
            f"llmbench embedded trainer: run {spec.run_id} world_size={info.world_size} "
            f"dtype={spec.dtype} gbs={spec.global_batch_size} steps={spec.steps}",
            flush=True,
        )
    return run_rank(info.rank, lambda: train(spec, info, args.cuda))


if __name__ == "__main__":
    sys.exit(main())
