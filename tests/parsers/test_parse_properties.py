"""Property tests over generated logs: any bytes parse without error, and generated step
lines (any stacked prefix, ANSI colour, field order, extra fields, notation, line ending,
window size) and generated runs (log interval, restarts, epoch rollover) read back exactly.

Example budget (max_examples summed): 16k + 8k + 8k + 7k + 1.5k + 3k + 3k = 46.5k, about
a minute on 2 cores (hypothesis costs ~0.6-1 ms per example here). In CI (``CI=true``) the
budget is scaled by 2.1 to 97.65k, which with the scan-engine properties (4.5k) passes
10^5 examples across the suite in about 2 minutes; ``LLMBENCH_HYPOTHESIS_SCALE`` sets the
scale. The line tests draw one integer seed and build the line from it (cheaper than
composing strategies, the same coverage).
"""

from __future__ import annotations

import math
import os
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmbench.parsers import Reason, Status, read_facts
from llmbench.parsers.failures import FailureTracker
from llmbench.parsers.summary import summarize

FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
SCALE = float(
    os.environ.get("LLMBENCH_HYPOTHESIS_SCALE", "2.1" if os.environ.get("CI") == "true" else "1")
)
SEEDS = st.integers(min_value=0, max_value=2**64)
# Prefixes real tools put before a line, drawn alone or stacked (outermost first): NeMo-Run
# (app name cut short), torchrun, srun --label, glog, Megatron's timestamp, NeMo's logger.
PREFIX_PIECES = [
    "exp/0 ",
    "ining-demo/0 ",
    "i.finetune/0 ",
    "[default3]:",
    "[default0]:[rank0]: ",
    "0: ",
    "12: ",
    "I0706 16:50:26.230209 140110937163584 metric_logger.py:214] ",
    " [2026-01-01 12:00:00] ",
    "[2025-11-20T14:55:23+08:00] ",
    "[NeMo I 2025-04-11 14:48:45 nemo_logging:393] ",
    "    ",
    "\x00\xff junk ",
]
PREFIX_TEXTS = ["", *PREFIX_PIECES]
ANSI = ["\x1b[0m", "\x1b[32m", "\x1b[1;31m", "\x1b[K"]


def budget(examples: int) -> int:
    return max(1, int(examples * SCALE))


def stacked_prefix(rng: random.Random) -> str:
    """Zero to three prefix pieces, each maybe wrapped in an ANSI colour code."""
    pieces = rng.sample(PREFIX_PIECES, rng.randrange(4))
    return "".join((rng.choice(ANSI) + p if rng.random() < 0.2 else p) for p in pieces)


def paint(rng: random.Random, text: str) -> str:
    """Colour a value now and then, as some terminals' log handlers do."""
    return f"{rng.choice(ANSI)}{text}\x1b[0m" if rng.random() < 0.1 else text


def draw(seed: int) -> tuple[random.Random, int, list[float], str, int]:
    """A generator, an iteration, three positive values, a prefix and a notation style."""
    rng = random.Random(seed)
    it = rng.randrange(10**6)
    vals = [10 ** rng.uniform(-6, 6) for _ in range(3)]
    return rng, it, vals, stacked_prefix(rng), rng.randrange(3)


def notation(value: float, style: int) -> str:
    return [repr(value), f"{value:.6e}", f"{value:.6E}"][style]


def encode(line: str) -> bytes:
    return line.encode("utf-8", "surrogateescape")


@settings(max_examples=budget(16_000), **FAST)
@given(SEEDS)
def test_nemo_line_reads_back(seed: int) -> None:
    rng, it, (step, loss, tflops), prefix, style = draw(seed)
    fields = [
        f"train_step_timing in s: {paint(rng, notation(step, style))}",
        f"reduced_train_loss: {notation(loss, style)}",
        f"TFLOPS_per_GPU: {notation(tflops, style)}",
        "global_batch_size: 128",
        rng.choice(["lr: 0", "lr: 1.499e-07", "lr: 3e-05"]),  # bare integers too
        *rng.sample(["consumed_samples: 5632", "val_loss: 4.106", "val_ppl: 17.57"], 2),
    ]
    global_step = rng.randrange(10**6) if rng.random() < 0.5 else None
    if global_step is not None:
        fields.append(f"global_step: {global_step}")
    rng.shuffle(fields)
    epoch = rng.randrange(5)
    line = f"{prefix}Training epoch {epoch}, iteration {it}/{it + 5} | " + " | ".join(fields)
    facts = read_facts(encode(line) + b"\n")
    records = facts.rows
    key = it if global_step is None else global_step
    assert list(records) == [key] and facts.last_iteration_logged == it + 5
    expected = {"step_time_s": step, "loss": loss, "tflops_per_gpu": tflops}
    for name, value in expected.items():
        assert math.isclose(records[key][name], value, rel_tol=1e-6)


@settings(max_examples=budget(8_000), **FAST)
@given(SEEDS)
def test_megatron_line_reads_back(seed: int) -> None:
    rng, it, (ms, loss, tflops), prefix, style = draw(seed)
    pad = rng.randrange(1, 9)
    fields = [
        "consumed samples: 10",
        f"elapsed time per iteration (ms): {paint(rng, notation(ms, style))}",
        f"throughput per GPU (TFLOP/s/GPU): {notation(tflops, style)}",
        f"lm loss: {notation(loss, style)}",
        *rng.sample(
            [
                "learning rate: 1.500000E-06",
                "load_balancing_loss: 1.041994E+00",
                "num zeros: 0.0",
                "params norm: 238.330",
                "loss scale: 1.0",
                "number of skipped iterations:   0",
            ],
            rng.randrange(7),
        ),
    ]
    rng.shuffle(fields)
    line = f"{prefix}iteration {it:>{pad}}/{it + 1:>{pad}} | " + " | ".join(fields) + " |"
    records = read_facts(encode(line) + b"\n").rows
    assert list(records) == [it]
    assert math.isclose(records[it]["step_time_s"], ms / 1000, rel_tol=1e-6)
    assert math.isclose(records[it]["loss"], loss, rel_tol=1e-6)
    assert math.isclose(records[it]["tflops_per_gpu"], tflops, rel_tol=1e-6)


@settings(max_examples=budget(8_000), **FAST)
@given(SEEDS)
def test_maxtext_line_reads_back(seed: int) -> None:
    rng, it, (seconds, tflops, _), prefix, style = draw(seed)
    fields = [
        f"TFLOP/s/device: {notation(tflops, style)}",
        "Tokens/s/device: 1.0",
        "total_weights: 196608",
        "loss: 0.000",
        *rng.sample(["lm_loss: 12.979", "perplexity: 433358.281", "moe_lb_loss: 0.01"], 2),
    ]
    rng.shuffle(fields)
    rampup = "[Rampup Batch Size Phase] " if rng.random() < 0.1 else ""
    line = (
        f"{prefix}{rampup}completed step: {it}, seconds: {paint(rng, notation(seconds, style))}, "
        + ", ".join(fields)
    )
    # a `Train step N training loss` line of the same step is not a step line
    other = f"{prefix}Train step {it + 1} training loss: 0.693147  - training perplexity: 2.0"
    records = read_facts(encode(other + "\n" + line + "\n")).rows
    assert list(records) == [it]
    assert math.isclose(records[it]["step_time_s"], seconds, rel_tol=1e-6)
    assert math.isclose(records[it]["tflops_per_gpu"], tflops, rel_tol=1e-6)


@settings(max_examples=budget(3_000), **FAST)
@given(SEEDS)
def test_generated_runs_read_back_cadence_restarts_and_epochs(seed: int) -> None:
    """A NeMo run logging every k-th step over epochs (keyed by global_step), restarted
    from an earlier step r times: the later lines win and the summary says k and r."""
    rng = random.Random(seed)
    interval, steps = rng.choice([1, 1, 2, 5, 10]), rng.randrange(4, 40)
    per_epoch, restarts = rng.randrange(3, 30), rng.randrange(3)
    prefix = stacked_prefix(rng)
    expected: dict[int, float] = {}
    lines, start = [], 0
    for attempt in range(restarts + 1):
        stop = steps if attempt == restarts else rng.randrange(start + 1, steps + 1)
        for g in range(start, stop):
            if g % interval:
                continue
            expected[g] = t = round(1 + attempt + g / 1000, 6)
            lines.append(
                f"{prefix}Training epoch {g // per_epoch}, iteration {g % per_epoch}/{steps - 1}"
                f" | global_step: {g} | train_step_timing in s: {t}"
            )
        if attempt < restarts:
            lines.append(
                "[default] Worker group FAILED. 3/3 attempts left; will restart worker group"
            )
            start = rng.randrange(0, stop)
            start -= start % interval
    facts = read_facts(encode("\n".join(lines) + "\n"))
    assert {i: row["step_time_s"] for i, row in facts.rows.items()} == expected
    assert facts.restarts == restarts
    summary = summarize(facts, (0, steps - 1))
    if len(expected) >= 2:  # every cadence point is there and the last one was logged
        assert summary.log_interval == interval and summary.status == Status.SUCCESS.value
        assert summary.reason == (Reason.RESTARTED.value if restarts else "")
    else:  # one logged point: no cadence to read, no spread to measure
        assert summary.status == Status.INCOMPLETE.value


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
    prefix = stacked_prefix(rng)
    noise = [rng.choice(NOISE_LINES) for _ in range(rng.randrange(4))]
    tracker = FailureTracker()
    for line in [*noise, (prefix + text).encode("utf-8", "surrogateescape")]:
        tracker.feed(line)
    assert tracker.root_cause()[0] is reason
