"""A gloo process group that is always torn down in an order that cannot deadlock.

Why the order matters (seen as a sweep that never ended, PyTorch 2.13 on the CPU): a gloo
worker thread drops its reference to a finished collective after the caller's ``wait()``
returned; when that reference is the last one, the collective's tensors are freed on the
worker, and freeing a tensor that Python has seen needs the GIL. ``ProcessGroupGloo``'s
destructor joins its workers. Python's own handle of the group releases the GIL around that
destructor, but DDP's ``Reducer`` handle does not: when the reducer outlives
``destroy_process_group()`` and holds the last reference, the main thread joins a worker
while holding the GIL the worker waits for, forever.

So, in every process that opens a group through this module:

1. every object that holds the group (DDP models, anything registered with ``hold``) is
   freed first, and that it really is gone is checked, not assumed;
2. the ranks then leave together (a barrier), so no rank tears down while a peer still
   sends;
3. the group is destroyed last, through its Python handle, which joins the workers with
   the GIL released.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

COLLECTIVE_TIMEOUT_S = 300
"""A peer that stops answering fails the collective after this long instead of the
default 30 minutes; the runner's watchdog ends a run that stalls sooner."""


class GroupHolders:
    """Weak references to the objects that hold the process group, checked at teardown."""

    def __init__(self) -> None:
        self._refs: list[tuple[str, weakref.ref[Any]]] = []

    def hold(self, obj: Any, name: str | None = None) -> Any:
        """Register ``obj`` (e.g. a DDP model) and return it unchanged."""
        self._refs.append((name or type(obj).__name__, weakref.ref(obj)))
        return obj

    def alive(self) -> list[str]:
        """Names of the registered objects that are still referenced."""
        gc.collect()  # DDP keeps reference cycles (hooks that refer to the module)
        return [name for name, ref in self._refs if ref() is not None]


class TeardownError(RuntimeError):
    """An object that holds the process group outlived the code that used it."""


@contextmanager
def process_group(
    rank: int, world_size: int, store: Any = None, backend: str = "gloo"
) -> Iterator[GroupHolders]:
    """Open a ``backend`` group (gloo on CPUs, nccl on GPUs) for ``world_size`` ranks (no
    group for one rank) and tear it down
    in the safe order above when the block ends normally. ``store`` is a
    ``torch.distributed.Store`` to meet in; None: the environment's (torchrun, srun).

    The block must not keep the registered objects in its own local variables: use them
    inside a function called from the block, so they are released when it returns. When
    the block raises, nothing is torn down (a peer may be gone, and the exception's
    traceback keeps the objects alive): the caller exits the process without running
    destructors (``exit_now``)."""
    holders = GroupHolders()
    if world_size == 1:
        yield holders
        return
    import torch.distributed as dist  # heavy optional dependency (the embedded extra)

    dist.init_process_group(
        backend,
        rank=rank,
        world_size=world_size,
        store=store,
        timeout=timedelta(seconds=COLLECTIVE_TIMEOUT_S),
    )
    yield holders
    alive = holders.alive()
    if alive:
        raise TeardownError(
            f"{', '.join(alive)} still referenced after training: it would outlive the "
            "process group and can deadlock its teardown"
        )
    dist.barrier()
    dist.destroy_process_group()
