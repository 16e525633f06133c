"""The embedded trainer's pure parts; its real training runs in the workflow tests."""

from itertools import pairwise

import pytest

from llmbench.parsers import parse_log
from llmbench.parsers.table import steps_table
from llmbench.ranks.embedded.train import (
    PEAK_LR,
    WARMUP_STEPS,
    RankInfo,
    learning_rate,
    nemo_step_line,
    rank_info,
)


def test_rank_from_torchrun_then_srun_then_single() -> None:
    assert rank_info({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}) == RankInfo(3, 4, 1)
    srun = {"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_LOCALID": "5"}
    assert rank_info(srun) == RankInfo(5, 16, 5)
    assert rank_info({}) == RankInfo(0, 1, 0)


def test_learning_rate_warms_up_then_decays() -> None:
    lrs = [learning_rate(s, 50) for s in range(50)]
    assert lrs[WARMUP_STEPS - 1] == pytest.approx(PEAK_LR)
    assert all(a < b for a, b in pairwise(lrs[:WARMUP_STEPS]))
    assert all(a >= b for a, b in pairwise(lrs[WARMUP_STEPS - 1 :]))
    assert lrs[-1] >= 0.1 * PEAK_LR


def test_step_lines_are_read_back_by_the_nemo_parser(tmp_path) -> None:
    log = tmp_path / "train.log"
    lines = [nemo_step_line(i, 50, 1e-3, 8, 7.0 - i / 10, 0.05 + i / 1000, 123) for i in range(50)]
    log.write_text("\n".join(lines) + "\n")
    parsed = parse_log(log)
    assert list(steps_table(parsed).iteration) == list(range(50))
    assert steps_table(parsed).step_time_s.iloc[40] == pytest.approx(0.09)
    assert steps_table(parsed).loss.iloc[10] == pytest.approx(6.0)
    assert parsed.summary.status == "success"
    window = [0.05 + i / 1000 for i in range(35, 45)]
    assert parsed.summary.step_time_mean_s == pytest.approx(sum(window) / 10)
