"""The gloo teardown order: many open-use-teardown cycles end, the unsafe order deadlocks.

Both run under torchrun with 2 ranks and under llmbench's own supervisor; the deadlock of
the unsafe order is seen by its watchdog, and the native stacks show why."""

from __future__ import annotations

import sys

from llmbench.core.limits import RunLimits
from llmbench.job.supervise import Ended, supervise
from tests.helpers import REPO

CYCLES = 40


def cycles(tmp_path, mode: str, count: int):
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=2",
        "-m",
        "tests.ranks.teardown_cycles",
        mode,
        str(count),
    ]
    log = tmp_path / "cycles.log"
    outcome = supervise(command, log, RunLimits(300, 120, 20), cwd=REPO)
    return outcome, log.read_text()


def test_safe_teardown_survives_many_cycles(tmp_path) -> None:
    outcome, log = cycles(tmp_path, "safe", CYCLES)
    assert (outcome.exit_code, outcome.ended_by) == (0, ""), log[-3000:]
    assert f"rank 0 all {CYCLES} cycles done" in log
    assert f"rank 1 all {CYCLES} cycles done" in log


def test_the_old_order_deadlocks_in_the_reducer(tmp_path) -> None:
    """The control: freeing DDP after the group joins gloo's workers with the GIL held."""
    outcome, log = cycles(tmp_path, "unsafe", CYCLES)
    assert outcome.ended_by == Ended.HANG, log[-3000:]
    dumps = [(tmp_path / name).read_text() for name in outcome.stack_dumps]
    stuck = [d for d in dumps if "Reducer::~Reducer" in d and "std::thread::join" in d]
    assert stuck, "no rank was stuck joining gloo's workers from the reducer"
    assert any("gil_scoped_acquire" in d for d in dumps)  # the worker waiting for the GIL
