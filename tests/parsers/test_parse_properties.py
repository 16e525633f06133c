"""Property tests over generated logs: any bytes parse without error, and generated step
lines (any prefix, field order, notation, line ending, window size) read back exactly.

Example budget (max_examples summed): 20k + 8k + 8k + 7k + 1.5k + 3k = 47.5k, about 55 s
on 2 cores (hypothesis costs ~0.6-1 ms per example here). In CI (``CI=true``) the budget is
scaled by 2.1 to 99.75k, which with the scan-engine properties (4.5k) passes 10^5 examples
across the suite in about 2 minutes; ``LLMBENCH_HYPOTHESIS_SCALE`` sets the scale.
The line tests draw one integer seed and build the line from it (cheaper than composing
strategies, the same coverage).
"""

from __future__ import annotations

import math
import os
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmbench.parsers import Reason, Status, read_facts
from llmbench.parsers.failures import FailureTracker
from llmbench.parsers.steps import parse_maxtext_step, parse_megatron_step, parse_nemo_step
from llmbench.parsers.summary import summarize

FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
SCALE = float(
    os.environ.get("LLMBENCH_HYPOTHESIS_SCALE", "2.1" if os.environ.get("CI") == "true" else "1")
)
SEEDS = st.integers(min_value=0, max_value=2**64)
PREFIX_TEXTS = [
    "",
    "0: ",
    "12: ",
    "exp/0 [default3]:",
    "[2025-11-20T14:55:23+08:00] ",
    "[NeMo I 2025-04-11 14:48:45 nemo_logging:393] ",
    "\x00\xff junk ",
]


def budget(examples: int) -> int:
    return max(1, int(examples * SCALE))


def draw(seed: int) -> tuple[random.Random, int, list[float], str, int]:
    """A generator, an iteration, three positive values, a prefix and a notation style."""
    rng = random.Random(seed)
    it = rng.randrange(10**6)
    vals = [10 ** rng.uniform(-6, 6) for _ in range(3)]
    return rng, it, vals, rng.choice(PREFIX_TEXTS), rng.randrange(3)


def notation(value: float, style: int) -> str:
    return [repr(value), f"{value:.6e}", f"{value:.6E}"][style]


@settings(max_examples=budget(20_000), **FAST)
@given(SEEDS)
def test_nemo_line_reads_back(seed: int) -> None:
    rng, it, (step, loss, tflops), prefix, style = draw(seed)
    fields = [
        f"train_step_timing in s: {notation(step, style)}",
        f"reduced_train_loss: {notation(loss, style)}",
        f"TFLOPS_per_GPU: {notation(tflops, style)}",
        "global_batch_size: 128",
    ]
    rng.shuffle(fields)
    line = f"{prefix}Training epoch 0, iteration {it}/{it + 5} | " + " | ".join(fields)
    record = parse_nemo_step(line.encode("utf-8", "surrogateescape"))
    assert record is not None and record.iteration == it and record.last_iteration == it + 5
    expected = {"step_time_s": step, "loss": loss, "tflops_per_gpu": tflops}
    for name, value in expected.items():
        assert math.isclose(record.values[name], value, rel_tol=1e-6)


@settings(max_examples=budget(8_000), **FAST)
@given(SEEDS)
def test_megatron_line_reads_back(seed: int) -> None:
    rng, it, (ms, loss, _), prefix, style = draw(seed)
    pad = rng.randrange(1, 9)
    line = (
        f"{prefix}iteration {it:>{pad}}/{it + 1:>{pad}} | consumed samples: 10 | "
        f"elapsed time per iteration (ms): {notation(ms, style)} | "
        f"lm loss: {notation(loss, style)} |"
    )
    record = parse_megatron_step(line.encode("utf-8", "surrogateescape"))
    assert record is not None and record.iteration == it
    assert math.isclose(record.values["step_time_s"], ms / 1000, rel_tol=1e-6)
    assert math.isclose(record.values["loss"], loss, rel_tol=1e-6)


@settings(max_examples=budget(8_000), **FAST)
@given(SEEDS)
def test_maxtext_line_reads_back(seed: int) -> None:
    _, it, (seconds, tflops, _), prefix, style = draw(seed)
    line = (
        f"{prefix}completed step: {it}, seconds: {notation(seconds, style)}, "
        f"TFLOP/s/device: {notation(tflops, style)}, Tokens/s/device: 1.0, loss: 0.000"
    )
    record = parse_maxtext_step(line.encode("utf-8", "surrogateescape"))
    assert record is not None and record.iteration == it
    assert math.isclose(record.values["step_time_s"], seconds, rel_tol=1e-6)
    assert math.isclose(record.values["tflops_per_gpu"], tflops, rel_tol=1e-6)


@settings(max_examples=budget(7_000), **FAST)
@given(st.binary(max_size=300), st.integers(1, 64))
def test_any_bytes_parse_without_error(data, window) -> None:
    facts = read_facts(data, window_bytes=window, context_bytes=64)
    summary = summarize(facts, (35, 44))
    assert summary.status in {s.value for s in Status}
    assert summary.reason in {r.value for r in Reason}


NOISE_LINES = [
    b"",
    b"node1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
    b"\xff\xfe\x00garbage",
    b"iteration 3/ | train_step_timing in s: x",
    b"Traceback",
]
NOISE = st.sampled_from(NOISE_LINES)


@settings(max_examples=budget(1_500), **FAST)
@given(
    st.lists(st.tuples(st.integers(0, 60), NOISE), min_size=0, max_size=12),
    st.sampled_from([b"\n", b"\r\n"]),
    st.integers(1, 300),
    st.booleans(),
)
def test_generated_logs_read_same_at_any_window(entries, eol, window, truncate) -> None:
    lines = []
    for it, noise in entries:
        lines.append(b"Training epoch 0, iteration %d/60 | train_step_timing in s: %d.5" % (it, it))
        lines.append(noise)
    log = eol.join(lines) + eol
    if truncate and lines:
        log = log[: -len(eol) - 1]  # the last line loses its end: its value may be cut short
    whole = read_facts(log, window_bytes=1 << 20, context_bytes=4096)
    chunked = read_facts(log, window_bytes=window, context_bytes=4096)
    assert whole.rows == chunked.rows
    assert set(whole.rows) <= {it for it, _ in entries}
    complete = entries[:-1] if truncate else entries
    for it, _ in complete:
        if it != entries[-1][0] or not truncate:
            assert it in whole.rows
    # later lines win: every row holds the value its iteration's line carried
    assert all(
        row["step_time_s"] in (it + 0.5, float(it), float(it // 10))
        for it, row in whole.rows.items()
        if it
    )


MARKERS = [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB", Reason.CUDA_OOM),
    (
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)",
        Reason.NCCL_TIMEOUT,
    ),
    (
        "slurmstepd: error: *** JOB 9 ON n1 CANCELLED AT 2025-01-01T00:00:00 DUE TO TIME LIMIT ***",
        Reason.TIME_LIMIT,
    ),
    (
        "slurmstepd: error: *** JOB 9 CANCELLED AT 2025-01-01 DUE TO NODE FAILURE ***",
        Reason.NODE_FAILURE,
    ),
    (
        "slurmstepd: error: *** STEP 9.0 ON n1 CANCELLED AT 2025-01-01T00:00:00 ***",
        Reason.CANCELLED,
    ),
    ("pyxis: importing docker image failed", Reason.CONTAINER_ERROR),
]


@settings(max_examples=budget(3_000), **FAST)
@given(SEEDS)
def test_failure_markers_are_classified(seed: int) -> None:
    rng = random.Random(seed)
    text, reason = rng.choice(MARKERS)
    prefix = rng.choice(PREFIX_TEXTS)
    noise = [rng.choice(NOISE_LINES) for _ in range(rng.randrange(4))]
    tracker = FailureTracker()
    for line in [*noise, (prefix + text).encode("utf-8", "surrogateescape")]:
        tracker.feed(line)
    assert tracker.root_cause()[0] is reason
