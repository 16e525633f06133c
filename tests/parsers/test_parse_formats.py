"""Example logs written by hand in each format; expected numbers computed by hand."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from llmbench.errors import ConfigError, ParseError
from llmbench.parsers import STEP_COLUMNS, Framework, Reason, Status, parse_log, read_facts
from llmbench.parsers.table import steps_table

NEMO_FULL = (
    "Training epoch 0, iteration {i}/{last} | lr: 7.496e-06 | global_batch_size: 128 | "
    "global_step: {i} | peak_memory_usage: 70833405952 | memory_allocated: 44271689728 | "
    "reduced_train_loss: {loss} | train_step_timing in s: {t} | consumed_samples: 6400"
)
MEGATRON = (
    "[2025-12-22 15:18:33] iteration {i:>8}/{last:>8} | consumed samples: 6400 | "
    "elapsed time per iteration (ms): {ms} | throughput per GPU (TFLOP/s/GPU): {tf} | "
    "learning rate: 1.5E-05 | global batch size: 128 | lm loss: {loss} | loss scale: 1.0 | "
    "grad norm: {gn} | number of skipped iterations: 0 | number of nan iterations: {nan} |"
)
MAXTEXT = (
    "completed step: {i}, seconds: {t}, TFLOP/s/device: {tf}, Tokens/s/device: 1035.970, "
    "total_weights: 524288, loss: {loss}"
)


def write(tmp_path: Path, lines: list[str], name: str = "log.out", eol: str = "\n") -> Path:
    path = tmp_path / name
    path.write_bytes(eol.join(lines).encode() + eol.encode())
    return path


def nemo_lines(last: int = 49, prefix: str = "") -> list[str]:
    return [
        prefix + NEMO_FULL.format(i=i, last=last, loss=11.0, t=f"{10 + i % 2}.5")
        for i in range(last + 1)
    ]


def test_nemo_window_stats_and_success(tmp_path: Path) -> None:
    parsed = parse_log(write(tmp_path, nemo_lines()))
    s = parsed.summary
    # iterations 35..44: five at 11.5 and five at 10.5 -> mean 11.0, population std 0.5
    assert (s.framework, s.status, s.reason) == ("nemo2", "success", "")
    assert s.step_time_mean_s == pytest.approx(11.0)
    assert s.step_time_std_s == pytest.approx(0.5)
    assert s.step_time_last_s == 11.5  # iteration 49 is odd
    assert (s.max_iteration, s.last_iteration_expected, s.iteration_base) == (49, 49, 0)
    assert (s.n_iterations, s.window_iterations) == (50, 10)
    assert math.isnan(s.tflops_per_gpu_mean)
    steps = steps_table(parsed)
    assert list(steps.columns) == list(STEP_COLUMNS)
    assert steps.iteration.dtype == "int64" and steps.step_time_s.dtype == "float64"
    assert steps.peak_memory_bytes.iloc[0] == 70833405952
    assert steps.tflops_per_gpu.isna().all()


@pytest.mark.parametrize(
    "prefix",
    [
        "",
        "0: ",
        "pretrain/0 [default0]:",
        "[2025-11-20T14:55:23+08:00] ",
        "[NeMo I 2025-04-11 14:48:45 nemo_logging:393] ",
        "3: [NeMo I 2025-04-11 14:48:45 module:393] ",
    ],
)
def test_nemo_prefixes(tmp_path: Path, prefix: str) -> None:
    s = parse_log(write(tmp_path, nemo_lines(prefix=prefix))).summary
    assert (s.status, s.n_iterations, s.step_time_mean_s) == ("success", 50, pytest.approx(11.0))


def test_nemo_field_order_notation_and_optional_fields(tmp_path: Path) -> None:
    lines = [
        "Training epoch 0, iteration 0/1 | train_step_timing in s: 1.25e+01 | TFLOPS_per_GPU: 6.5E2"
        " | reduced_train_loss: 1.2e1 | tokens_per_sec_per_gpu: 1.073e+04",
        "Training epoch 0, iteration 1/1 | TFLOPS_per_GPU: 640 | val_loss: 3.5"
        " | train_step_timing in s: 12.0 | reduced_train_loss: 11",
    ]
    parsed = parse_log(write(tmp_path, lines), window=(0, 1))
    steps = steps_table(parsed)
    assert steps.step_time_s.tolist() == [12.5, 12.0]
    assert steps.tflops_per_gpu.tolist() == [650.0, 640.0]
    assert steps.loss.tolist() == [12.0, 11.0]
    assert steps.tokens_per_s_per_gpu.iloc[0] == 10730.0
    assert steps.val_loss.iloc[1] == 3.5
    assert parsed.summary.tflops_per_gpu_mean == 645.0
    assert parsed.summary.tflops_per_gpu_std == 5.0


def test_nemo_timing_list_when_no_step_lines(tmp_path: Path) -> None:
    path = write(tmp_path, ["[NeMo I x] train_step_timing in s: [11.85, 6.98, 7.0]"])
    parsed = parse_log(path, window=(1, 2))
    assert parsed.summary.framework == "nemo2"
    assert steps_table(parsed).step_time_s.tolist() == [11.85, 6.98, 7.0]
    assert parsed.summary.step_time_mean_s == pytest.approx(6.99)


def test_megatron_is_one_based_and_reads_tflops_grad_norm(tmp_path: Path) -> None:
    lines = [
        MEGATRON.format(
            i=i, last=50, ms=9000 + 10 * (i % 2), tf=663.5, loss="7.4E+00", gn=2.9, nan=0
        )
        for i in range(1, 51)
    ]
    parsed = parse_log(write(tmp_path, lines))
    s = parsed.summary
    assert (s.framework, s.iteration_base, s.status) == ("megatron", 1, "success")
    assert (s.max_iteration, s.last_iteration_expected) == (50, 50)
    # window 35..44 in Megatron's numbering: five 9.01 s and five 9.00 s
    assert s.step_time_mean_s == pytest.approx(9.005)
    assert s.step_time_std_s == pytest.approx(0.005)
    assert s.tflops_per_gpu_mean == pytest.approx(663.5)
    assert steps_table(parsed).grad_norm.iloc[0] == 2.9
    assert steps_table(parsed).loss.iloc[0] == 7.4


def test_megatron_nan_iterations_make_run_invalid(tmp_path: Path) -> None:
    lines = [
        MEGATRON.format(i=i, last=50, ms=9000, tf=1, loss=7, gn=1, nan=int(i == 3))
        for i in range(1, 51)
    ]
    s = parse_log(write(tmp_path, lines)).summary
    assert (s.status, s.reason) == ("invalid", "nan_grad_norm")


def test_bridge_step_time_lines_alone(tmp_path: Path) -> None:
    lines = [
        f"Step Time : {9 + (i % 2)}.09s GPU utilization: 663.5MODEL_TFLOP/s/GPU" for i in range(50)
    ]
    s = parse_log(write(tmp_path, lines)).summary
    assert (s.framework, s.iteration_base, s.max_iteration) == ("megatron", 1, 50)
    assert s.step_time_mean_s == pytest.approx(9.59)
    assert s.tflops_per_gpu_mean == pytest.approx(663.5)


BRIDGE_ITERATION = (
    " [2026-08-20 10:00:00] iteration {i:8d}/{last:8d} | consumed samples: {c:12d} | "
    "elapsed time per iteration (ms): {ms:.1f} | learning rate: 3.000000E-05 | "
    "global batch size:   512 | lm loss: 8.114214E+00 | loss scale: 1.0 | grad norm: 0.042 | "
    "number of skipped iterations:   0 | number of nan iterations:   0 |"
)


def bridge_lines(step_time_first: bool) -> list[str]:
    """Megatron-Bridge 0.5's two lines per step: ``Step Time`` (rank 0) and the iteration
    line (last rank), here with an odd step every other iteration and its own TFLOPS."""
    lines = []
    for i in range(1, 51):
        ms = 9089.0 + 1000 * (i % 2)
        step = f"Step Time : {ms / 1000:.2f}s GPU utilization: {600 + i:.1f}MODEL_TFLOP/s/GPU"
        it = BRIDGE_ITERATION.format(i=i, last=50, c=512 * i, ms=ms)
        lines += [step, it] if step_time_first else [it, step]
    return lines


@pytest.mark.parametrize("step_time_first", [True, False])
def test_bridge_step_time_goes_to_the_iteration_it_repeats(tmp_path, step_time_first) -> None:
    """Rank 0's ``Step Time`` line comes before the last rank's iteration line of the same
    step (MB:src/megatron/bridge/training/utils/train_utils.py@b50da4c#L1150-1153,
    L1190-1240), or after it when the ranks' output interleaves: either way each
    iteration gets the TFLOPS of the line that repeats its step time."""
    parsed = parse_log(write(tmp_path, bridge_lines(step_time_first)))
    steps = steps_table(parsed).set_index("iteration")
    assert steps.tflops_per_gpu.to_dict() == {i: 600.0 + i for i in range(1, 51)}
    assert parsed.summary.tflops_per_gpu_mean == pytest.approx(639.5)  # iterations 35-44


def test_bridge_step_time_of_another_step_is_not_taken(tmp_path) -> None:
    lines = [BRIDGE_ITERATION.format(i=i, last=50, c=512 * i, ms=9089.0) for i in range(1, 51)]
    lines.insert(10, "Step Time : 12.34s GPU utilization: 663.5MODEL_TFLOP/s/GPU")
    steps = steps_table(parse_log(write(tmp_path, lines)))
    assert steps.tflops_per_gpu.isna().all()


def test_maxtext_zero_based_with_expected_steps(tmp_path: Path) -> None:
    lines = [MAXTEXT.format(i=i, t=7.908, tf=460.48, loss="0.000") for i in range(50)]
    s = parse_log(write(tmp_path, lines), expected_steps=50).summary
    assert (s.framework, s.iteration_base, s.status) == ("maxtext", 0, "success")
    assert (s.max_iteration, s.last_iteration_expected) == (49, 49)
    assert s.step_time_mean_s == pytest.approx(7.908)
    s_short = parse_log(write(tmp_path, lines[:45]), expected_steps=50).summary
    assert (s_short.status, s_short.reason) == ("incomplete", "final_iteration_missing")


def test_checkpoint_timings(tmp_path: Path) -> None:
    lines = [
        "[NeMo I 2025-04-11 14:46:18 nemo_logging:393] Global Checkpoint Load : Rank : 0 : "
        "Start time : 1744407969.270s : Time spent in load_checkpoint: 9.712s",
        *nemo_lines(),
        "[NeMo I 2025-04-11 14:48:45 nemo_logging:393] Global Checkpoint Save : Rank: 0 : "
        "Iteration: 50 : Start time: 1744408121.151s : Save duration: 4.389s",
    ]
    s = parse_log(write(tmp_path, lines)).summary
    assert (s.checkpoint_saves, s.checkpoint_save_s, s.checkpoint_load_s) == (1, 4.389, 9.712)


def test_restart_later_lines_win_and_duplicates_count_once(tmp_path: Path) -> None:
    first = [NEMO_FULL.format(i=i, last=49, loss=11, t=20.0) for i in range(40)]
    again = [NEMO_FULL.format(i=i, last=49, loss=11, t=10.0) for i in range(30, 50)]
    dup = ["1: " + NEMO_FULL.format(i=45, last=49, loss=11, t=10.0)]
    parsed = parse_log(write(tmp_path, first + again + dup))
    s = parsed.summary
    assert (s.restarts, s.duplicates, s.n_iterations) == (1, 1, 50)
    assert s.step_time_mean_s == 10.0  # the re-run iterations replaced the first ones
    assert steps_table(parsed).step_time_s.iloc[0] == 20.0


@pytest.mark.parametrize(
    ("tail", "reason"),
    [
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "cuda_oom"),
        (
            "[rank3]:[E1120 10:00:00.0 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 ms",
            "nccl_timeout",
        ),
        (
            "slurmstepd: error: *** JOB 1234 ON n1 CANCELLED AT 2025-01-01T00:00:00"
            " DUE TO TIME LIMIT ***",
            "time_limit",
        ),
        ("srun: error: Node failure on n3", "node_failure"),
        (
            "slurmstepd: error: *** STEP 1234.0 ON n1 CANCELLED AT 2025-01-01T00:00:00 ***",
            "cancelled",
        ),
        ("slurmstepd: error: pyxis: failed to import docker image", "container_error"),
        ("slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0.", "host_oom"),
        ("srun: error: n1: task 0: Exited with exit code 1", "nonzero_exit"),
    ],
)
def test_failure_reasons(tmp_path: Path, tail: str, reason: str) -> None:
    s = parse_log(write(tmp_path, [*nemo_lines()[:20], "0: " + tail])).summary
    assert (s.status, s.reason) == ("failed", reason)
    assert Reason(s.reason) in set(Reason)


def test_python_exception_type(tmp_path: Path) -> None:
    lines = [
        *nemo_lines()[:10],
        "0: Traceback (most recent call last):",
        '0:   File "train.py", line 3, in <module>',
        "0: ZeroDivisionError: division by zero",
        "srun: error: n1: task 0: Exited with exit code 1",
    ]
    s = parse_log(write(tmp_path, lines)).summary
    assert (s.status, s.reason, s.detail) == ("failed", "python_exception", "ZeroDivisionError")


def test_oom_wins_over_the_exception_it_raises(tmp_path: Path) -> None:
    lines = ["Traceback (most recent call last):", "torch.OutOfMemoryError: CUDA out of memory."]
    s = parse_log(write(tmp_path, lines)).summary
    assert (s.status, s.reason) == ("failed", "cuda_oom")


def test_nan_loss_is_invalid(tmp_path: Path) -> None:
    lines = nemo_lines()
    lines[10] = NEMO_FULL.format(i=10, last=49, loss="nan", t=1.0)
    s = parse_log(write(tmp_path, lines)).summary
    assert (s.status, s.reason) == ("invalid", "nan_loss")


def test_incomplete_counts_iterations(tmp_path: Path) -> None:
    s = parse_log(write(tmp_path, nemo_lines()[:40])).summary
    assert (s.status, s.reason, s.n_iterations) == ("incomplete", "window_incomplete", 40)
    assert "40 iterations" in s.detail


def test_empty_binary_crlf_and_truncated(tmp_path: Path) -> None:
    empty = tmp_path / "empty.out"
    empty.write_bytes(b"")
    assert parse_log(empty).summary.status == Status.NO_DATA.value
    garbage = tmp_path / "garbage.out"
    garbage.write_bytes(bytes(range(256)) * 100)
    assert parse_log(garbage).summary.reason == Reason.NO_STEP_LINES.value
    crlf = write(tmp_path, nemo_lines(), "crlf.out", eol="\r\n")
    assert parse_log(crlf).summary.status == "success"
    cut = write(tmp_path, nemo_lines(), "cut.out")
    data = cut.read_bytes()
    cut.write_bytes(data[: data.rfind(b"train_step_timing") + 10])  # last line cut mid-field
    assert parse_log(cut).summary.max_iteration == 48


def test_long_line_is_capped_not_loaded(tmp_path: Path) -> None:
    big = b"x" * (3 << 20) + b" train_step_timing in s: 1.0 " + b"y" * (3 << 20)
    log = b"\n".join([big, *(line.encode() for line in nemo_lines())]) + b"\n"
    facts = read_facts(log, window_bytes=1 << 20, context_bytes=4096)
    assert len(facts.rows) == 50


def test_lines_across_window_edges_are_read_once() -> None:
    log = ("\n".join(nemo_lines()) + "\n").encode()
    for window in (7, 64, 333, 4096):
        facts = read_facts(log, window_bytes=window, context_bytes=4096)
        assert sorted(facts.rows) == list(range(50)) and facts.duplicates == 0


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ParseError):
        parse_log(tmp_path / "missing.out")
    with pytest.raises(ConfigError):
        parse_log(write(tmp_path, []), window=(44, 35))
    with pytest.raises(ConfigError):
        parse_log(write(tmp_path, []), framework="pytorch")
    assert (
        parse_log(write(tmp_path, nemo_lines()), framework=Framework.NEMO2).summary.status
        == "success"
    )


def test_nccl_collective_summary(tmp_path: Path) -> None:
    coll = (
        "node1:12345:12400 [{r}] NCCL INFO {op}: opCount {c:x} sendbuff 0x7f00 recvbuff 0x7f00 "
        "count {n} datatype {dt} op 0 root 0 comm 0x5500 [nranks=16] stream 0x5600"
    )
    lines = [
        coll.format(r=r, op="AllReduce", c=c, n=2097152, dt=7) for r in range(2) for c in range(3)
    ]
    lines += [coll.format(r=0, op="AllGather", c=9, n=1000, dt=9)]
    parsed = parse_log(write(tmp_path, [*nemo_lines(), *lines]), nccl=True)
    rows = {(c.operation, c.count): c for c in parsed.nccl}
    assert rows["AllReduce", 2097152].bytes == 2097152 * 4
    assert rows["AllReduce", 2097152].calls == 6
    assert (rows["AllGather", 1000].bytes, rows["AllGather", 1000].datatype) == (2000, "bfloat16")
    assert parsed.summary.extra["nccl"][0]["operation"] == "AllReduce"


# --- real-world variety: cadence, epochs, restarts, prefixes, outcomes (issue-driven) ---

MEGATRON_EVERY_10 = (
    " [2024-09-14 19:44:{s:02d}] iteration {i:>8}/{last:>8} | consumed samples: {c} | "
    "elapsed time per iteration (ms): {ms} | learning rate: 2.343750E-07 | global batch size:"
    "    16 | lm loss: 1.105231E+01 | loss scale: 262144.0 | grad norm: 23.668 | "
    "number of skipped iterations:   0 | number of nan iterations:   0 |"
)


def megatron_every_10(last: int = 200, skip: tuple[int, ...] = ()) -> list[str]:
    return [
        MEGATRON_EVERY_10.format(s=i % 60, i=i, last=last, c=16 * i, ms=400 + i % 20)
        for i in range(10, last + 1, 10)
        if i not in skip
    ]


def test_log_interval_is_detected_and_windows_read_at_its_cadence(tmp_path: Path) -> None:
    path = write(tmp_path, megatron_every_10())
    s = parse_log(path).summary  # 35-44 holds one logged point (40)
    assert (s.log_interval, s.max_iteration, s.n_iterations) == (10, 200, 20)
    assert (s.status, s.reason) == ("incomplete", "window_too_sparse")
    assert "1 logged point" in s.detail and "last:N" in s.detail
    s = parse_log(path, (30, 60)).summary  # 30, 40, 50, 60: 0.41, 0.4, 0.41, 0.4 s
    assert (s.status, s.window_iterations) == ("success", 4)
    assert s.step_time_mean_s == pytest.approx(0.405) and s.step_time_std_s == pytest.approx(0.005)
    s = parse_log(write(tmp_path, megatron_every_10(skip=(150,))), (100, 200)).summary
    assert (s.status, s.reason) == ("incomplete", "window_incomplete")
    assert "10 of 11 window points" in s.detail


def test_final_iteration_is_judged_at_the_cadence(tmp_path: Path) -> None:
    # train_iters 205 with --log-interval 10: 200 is the last iteration ever logged
    lines = [line.replace("/     200 |", "/     205 |") for line in megatron_every_10()]
    s = parse_log(write(tmp_path, lines), (100, 200)).summary
    assert (s.status, s.last_iteration_expected) == ("success", 205)
    s = parse_log(write(tmp_path, lines[:-1]), (100, 190)).summary
    assert (s.status, s.reason) == ("incomplete", "final_iteration_missing")


def test_first_megatron_line_without_loss_is_a_step(tmp_path: Path) -> None:
    first = (
        " iteration       10/     200 | consumed samples:          160 | elapsed time per "
        "iteration (ms): 995.3 | learning rate: 0.000000E+00 | global batch size:    16 | "
        "loss scale: 8388608.0 | number of skipped iterations:  10 | number of nan iterations:"
        "   0 |"
    )
    parsed = parse_log(write(tmp_path, [first, *megatron_every_10()[1:]]), "last:5")
    steps = steps_table(parsed)
    assert steps.step_time_s.iloc[0] == pytest.approx(0.9953)
    assert math.isnan(steps.loss.iloc[0]) and steps.skipped_iterations.iloc[0] == 10
    assert parsed.summary.status == "success"


def test_nemo_epoch_rollover_is_keyed_by_global_step(tmp_path: Path) -> None:
    line = (
        "Training epoch {e}, iteration {i}/49 | lr: 0 | global_batch_size: 512 | "
        "global_step: {g} | reduced_train_loss: 11.03 | train_step_timing in s: {t}"
    )
    lines = [line.format(e=g // 19, i=g % 19, g=g, t=7 + g % 2) for g in range(50)]
    s = parse_log(write(tmp_path, lines)).summary
    assert (s.status, s.restarts, s.n_iterations, s.max_iteration) == ("success", 0, 50, 49)
    assert s.step_time_mean_s == pytest.approx(7.5)


CRASH = "0: Traceback (most recent call last):\n0: RuntimeError: CUDA error: illegal address"
RESTART = "[INFO] [default] Worker group FAILED. 3/3 attempts left; will restart worker group"


def test_launcher_restart_without_going_back_is_counted(tmp_path: Path) -> None:
    lines = nemo_lines()
    lines[30:30] = [CRASH, RESTART]  # the job resumes where it stopped
    s = parse_log(write(tmp_path, [*lines, "Job pretrain-x1 finished: SUCCEEDED"])).summary
    assert (s.status, s.reason, s.restarts) == ("success", "restarted", 1)
    assert s.detail == "1 restart after python_exception"


def test_failure_after_the_last_restart_decides(tmp_path: Path) -> None:
    lines = [
        *nemo_lines()[:30],
        RESTART,
        *nemo_lines()[25:40],
        "0: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "Job pretrain-x1 finished: FAILED",
    ]
    s = parse_log(write(tmp_path, lines)).summary
    assert (s.status, s.reason, s.restarts) == ("failed", "cuda_oom", 1)


@pytest.mark.parametrize(
    ("tail", "status", "reason"),
    [
        ("Job pretrain-x1 finished: FAILED", "failed", "job_failed"),
        ("Job pretrain-x1 finished: SUCCEEDED", "success", ""),
        (
            "[NeMo E 2025-03-07 22:43:58 straggler_det_callback:239] Detected stragglers. "
            "Terminating training...",
            "success",
            "",
        ),
    ],
)
def test_the_jobs_last_word_decides_a_finished_run(
    tmp_path: Path, tail: str, status: str, reason: str
) -> None:
    s = parse_log(write(tmp_path, [*nemo_lines(), tail])).summary
    assert (s.status, s.reason) == (status, reason)


def test_straggler_abort_and_succeeded_job_with_traceback(tmp_path: Path) -> None:
    abort = [
        *nemo_lines()[:20],
        "x/0 [default0]:[NeMo E 2025-03-07 22:43:58 straggler_det_callback:239] Detected "
        "stragglers. Terminating training...",
        "x/0 Traceback (most recent call last):",
        "x/0 torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Job demo-1 finished: FAILED",
    ]
    s = parse_log(write(tmp_path, abort)).summary
    assert (s.status, s.reason) == ("failed", "straggler")
    # the job's last word is SUCCEEDED: an earlier traceback does not make it a failure
    stopped = [*nemo_lines()[:20], "Traceback (most recent call last):", "ValueError: x"]
    s = parse_log(write(tmp_path, [*stopped, "Job demo-1 finished: SUCCEEDED"])).summary
    assert (s.status, s.reason) == ("incomplete", "window_incomplete")


@pytest.mark.parametrize("value", ["nan", "-1.5", "0", "0.0", "inf", "-inf", "1e308", "1e5"])
def test_impossible_step_times_in_the_window_are_invalid(tmp_path: Path, value: str) -> None:
    lines = nemo_lines()
    lines[40] = NEMO_FULL.format(i=40, last=49, loss=11.0, t=value)
    s = parse_log(write(tmp_path, lines)).summary
    assert (s.status, s.reason) == ("invalid", "bad_step_time")
    assert "iteration 40" in s.detail


def test_huge_step_times_do_not_overflow(tmp_path: Path) -> None:
    lines = [NEMO_FULL.format(i=i, last=49, loss=11.0, t="1.7e308") for i in range(50)]
    s = parse_log(write(tmp_path, lines)).summary
    assert s.status == "invalid" and s.step_time_mean_s == pytest.approx(1.7e308)
    assert s.step_time_std_s == 0.0


def test_a_bad_step_time_outside_the_window_is_kept(tmp_path: Path) -> None:
    lines = nemo_lines()
    lines[3] = NEMO_FULL.format(i=3, last=49, loss=11.0, t="-1")
    parsed = parse_log(write(tmp_path, lines))
    assert parsed.summary.status == "success" and steps_table(parsed).step_time_s.iloc[3] == -1


STACKED = [
    "ining-demo/0 [default0]:",
    "0: [2026-01-01 12:00:00] ",
    "I0706 16:50:26.230209 140110937163584 file.py:214] ",
    "ining-demo/0 3: I0706 16:50:26.230209 140110937163584 file.py:214] ",
    "\x1b[32m0: \x1b[0m[2026-01-01 12:00:00] \x1b[1m",
]


@pytest.mark.parametrize("prefix", STACKED)
def test_prefixes_alone_stacked_and_coloured(tmp_path: Path, prefix: str) -> None:
    nemo = [prefix + line for line in nemo_lines()]
    megatron = [
        prefix + MEGATRON.format(i=i, last=50, ms=9000, tf=600, loss="7.4E+00", gn=1, nan=0)
        for i in range(1, 51)
    ]
    maxtext = [
        prefix + MAXTEXT.format(i=i, t="7.908", tf="460.480", loss="0.000") for i in range(50)
    ]
    for lines, mean in ((nemo, 11.0), (megatron, 9.0), (maxtext, 7.908)):
        s = parse_log(write(tmp_path, lines)).summary
        assert (s.status, s.n_iterations, s.restarts, s.duplicates) == ("success", 50, 0, 0)
        assert s.step_time_mean_s == pytest.approx(mean)


def test_ansi_codes_inside_fields(tmp_path: Path) -> None:
    lines = [
        f"\x1b[0;32mTraining epoch 0, iteration {i}/49\x1b[0m | train_step_timing in s: "
        f"\x1b[1m{10 + i % 2}.5\x1b[0m | reduced_train_loss: \x1b[33m11.0\x1b[0m\r"
        for i in range(50)
    ]
    s = parse_log(write(tmp_path, lines)).summary
    assert (s.status, s.step_time_mean_s) == ("success", pytest.approx(11.0))


def test_a_clock_at_line_start_is_not_a_rank_label(tmp_path: Path) -> None:
    lines = [f"16:50:{i:02d} " + line for i, line in enumerate(nemo_lines())]
    s = parse_log(write(tmp_path, lines)).summary
    assert (s.status, s.restarts, s.duplicates) == ("success", 0, 0)


def test_maxtext_numbering_other_step_lines_and_last_n(tmp_path: Path) -> None:
    lines = []
    for i in range(1, 21):  # steps from 1; `Train step` lines are not step lines
        lines.append(
            f"I0706 16:50:26.257925 1401 peft_trainer.py:474] Train step {i} training loss: 0.69"
        )
        lines.append(
            "I0706 16:50:26.257925 1401 metric_logger.py:214] "
            + MAXTEXT.format(i=i, t=f"{2 if i in (1, 20) else 1}.0", tf=80, loss="0.693")
        )
    lines.append("Completed eval after train step 20, loss=0.693, perplexity=2.000")
    parsed = parse_log(write(tmp_path, lines), "last:5")
    s = parsed.summary
    assert (s.n_iterations, s.max_iteration, s.window) == (20, 20, (15, 19))
    assert (s.status, s.step_time_mean_s, s.step_time_std_s) == ("success", 1.0, 0.0)
    assert steps_table(parsed).iteration.tolist() == list(range(1, 21))


def test_tflops_above_the_peak_are_kept_and_flagged(tmp_path: Path) -> None:
    lines = [MAXTEXT.format(i=i, t="0.002", tf="917442.589", loss="10.0") for i in range(50)]
    parsed = parse_log(write(tmp_path, lines), expected_steps=50)
    s = parsed.summary
    assert s.flags == "tflops_above_peak" and s.tflops_per_gpu_mean == pytest.approx(917442.589)
    assert s.extra["tflops_above_peak"]["steps"] == 50
    ok = [MAXTEXT.format(i=i, t="7.9", tf="460.480", loss="1.0") for i in range(50)]
    assert parse_log(write(tmp_path, ok)).summary.flags == ""
    assert parse_log(write(tmp_path, ok), peak_tflops=459).summary.flags == "tflops_above_peak"


def test_megatron_seconds_field_and_running_mean(tmp_path: Path) -> None:
    lines = [
        f"[default3]: iteration {i:>8}/      50 | elapsed time per iteration (s): 34.9991 | lm "
        "loss: 1.0 |"
        for i in range(1, 51)
    ]
    assert parse_log(write(tmp_path, lines)).summary.step_time_mean_s == pytest.approx(34.9991)
    lines = [
        f"iteration {i}/50 | elapsed time per iteration (ms): 100.0/101.5 | compute per GPU "
        "(TFLOP/s/GPU): 496.3 (avg 496.1) | global batch size: 32"
        for i in range(1, 51)
    ]
    s = parse_log(write(tmp_path, lines)).summary
    assert (s.step_time_mean_s, s.tflops_per_gpu_mean) == (pytest.approx(0.1), pytest.approx(496.3))


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.out")
    with pytest.raises(ParseError, match="named pipe"):
        parse_log(tmp_path / "pipe.out")
    with pytest.raises(ParseError, match="folder"):
        parse_log(tmp_path)
    (tmp_path / "loop.out").symlink_to(tmp_path / "loop.out")
    with pytest.raises(ParseError, match=r"loop\.out: cannot read"):
        parse_log(tmp_path / "loop.out")


@pytest.mark.parametrize("window", ["last:1", "10-5", "abc", (5, 2), ("a", 3)])
def test_bad_windows_are_config_errors(tmp_path: Path, window: object) -> None:
    with pytest.raises(ConfigError, match="window"):
        parse_log(write(tmp_path, nemo_lines()), window)  # type: ignore[arg-type]
