"""The step clock (``llmbench.ranks.step_clock``) for trainers built on Lightning (NeMo 2).

A Lightning callback: the host's wall clock around each training batch, numbered by the
trainer's ``global_step`` when the batch starts (the iteration NeMo's log prints). The
host sees a step end when the trainer returns from it; with CUDA's asynchronous launches
that is up to one step late, which moves a 10-step window's energy by well under a step.
Imports Lightning at module level: only the NeMo entry point imports this module, inside
the function that builds the recipe.
"""

from __future__ import annotations

import time
from typing import Any, TextIO

from lightning.pytorch import Callback

from llmbench.ranks.step_clock import open_step_clock, record_step


class StepClock(Callback):
    """Writes ``step_clock.csv`` in the working directory (global rank 0, telemetry on)."""

    def __init__(self) -> None:
        # Nothing open before training: NeMo copies and serializes the recipe first.
        self._clock: TextIO | None = None
        self._step = 0
        self._start = 0.0

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._clock = open_step_clock(trainer.global_rank)

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        self._step, self._start = trainer.global_step, time.time()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self._clock is not None:
            record_step(self._clock, self._step, self._start, time.time())

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self._clock is not None:
            self._clock.close()
            self._clock = None
