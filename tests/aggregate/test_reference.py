"""Reference comparison: logs at the published step times come out `within`."""

from __future__ import annotations

import pandas as pd
import pytest

from llmbench.aggregate.reference import builtin_references, compare, load_references
from llmbench.aggregate.run_facts import Peak
from llmbench.core.catalog import published_results
from llmbench.core.config import run_specs, validate_config
from llmbench.files.atomic import write_json_atomic
from tests.helpers import runs_table_from_records, tiny_sweep

SCALES = [8, 16, 32, 64, 128]


def published_8b_bf16() -> dict[int, float]:
    return {
        r.gpus: r.step_time_s
        for r in published_results()
        if r.kind == "table" and r.key()[:4] == ("llama3.1-nemo", "8b", "bf16", "h100")
    }


def nemo_log(path, step_time_s: float, steps: int = 50) -> None:
    """A NeMo 2 log whose every iteration takes the given time (a real log's format)."""
    lines = [
        f"[NeMo I 2025-04-11 14:48:45 nemo_logging:393] Training epoch 0, iteration {i}/"
        f"{steps - 1} | lr: 1e-05 | global_batch_size: 128 | global_step: {i} | "
        f"reduced_train_loss: {11 - i / 10:.2f} | train_step_timing in s: {step_time_s} | "
        f"consumed_samples: {(i + 1) * 128}"
        for i in range(steps)
    ]
    path.write_text("\n".join(lines) + "\n")


NEMO_8B_H100 = {"workload": "llama3.1-nemo", "sizes": ["8b"], "dtypes": ["bf16"],
                "gpu_type": "h100", "scales": SCALES}  # fmt: skip


def sweep_table(
    tmp_path, step_time_for, sweep=NEMO_8B_H100, write_log=nemo_log, peak=989e12, **config
) -> pd.DataFrame:
    """The runs table of one sweep entry whose logs (``write_log``) run at
    ``step_time_for(gpus)``."""
    from llmbench.parsers import parse_log

    cfg = validate_config({"sweeps": [sweep], **config})
    parts = []
    for spec in run_specs(cfg):
        log = tmp_path / f"{spec.run_id}.log"
        write_log(log, step_time_for(spec.gpus))
        record = {
            "run_id": spec.run_id,
            "attempt": 1,
            "exit_code": 0,
            "log": log.name,
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-01T00:10:00+00:00",
            "spec": spec.to_dict(),
            "provenance": {},
        }
        summary = parse_log(log, expected_steps=spec.steps).summary.as_dict()
        parts.append((record, summary, Peak(peak, "datasheet")))
    return runs_table_from_records(parts, 1e12)


@pytest.mark.parametrize(
    ("config", "reference_stack"),
    [
        ({"container": "enroot"}, True),  # the reference's image
        ({"container": "enroot", "images": {"llama3.1-nemo": "site/nemo:26.01"}}, False),
        ({}, False),  # no container: a Python environment
    ],
)
def test_the_verdict_says_when_the_stack_is_not_the_references(
    tmp_path, config, reference_stack
) -> None:
    runs = compare(sweep_table(tmp_path, published_8b_bf16().__getitem__, **config),
                   builtin_references())  # fmt: skip
    assert runs["reference_stack"].tolist() == [reference_stack] * len(SCALES)
    assert (runs["verdict"] == "within").all()
    other = runs["reference_source"].str.endswith("not the reference's software stack "
                                                  "(reference_stack false: see image)")  # fmt: skip
    assert other.tolist() == [not reference_stack] * len(SCALES)
    image = "site/nemo:26.01" if "images" in config else "nvcr.io/nvidia/nemo:25.02.01"
    images = runs["image"].astype(object).where(runs["image"].notna(), None).tolist()
    assert images == [image if config else None] * len(SCALES)


def test_published_step_times_are_within(tmp_path) -> None:
    published = published_8b_bf16()
    assert sorted(published) == SCALES
    runs = compare(sweep_table(tmp_path, published.__getitem__), builtin_references())
    assert (runs.status == "success").all()
    assert (runs.verdict == "within").all(), runs[["run_id", "deviation_pct", "verdict"]]
    assert runs.deviation_pct.abs().max() < 1e-9
    # and the derived numbers are the spec's: 8192 * 128 / 12.27 = 85459 tokens/s on 8 GPUs
    eight = runs.set_index("gpus").loc[8]
    assert round(eight.tokens_per_s) == 85459


@pytest.mark.parametrize(
    ("factor", "verdict"), [(0.9, "faster"), (1.1, "slower"), (1.04, "within")]
)
def test_deviation_beyond_the_tolerance_is_judged(tmp_path, factor, verdict) -> None:
    published = published_8b_bf16()
    runs = compare(
        sweep_table(tmp_path, lambda g: published[g] * factor), builtin_references(), tolerance=0.05
    )
    assert (runs.verdict == verdict).all()
    assert runs.deviation_pct.to_numpy() == pytest.approx((factor - 1) * 100)


def test_user_reference_overrides_the_published_one(tmp_path) -> None:
    published = published_8b_bf16()
    runs = sweep_table(tmp_path, lambda g: published[g] * 1.2)
    previous = runs.assign(step_time_mean_s=runs.step_time_mean_s)  # a "previous sweep"
    path = tmp_path / "previous.parquet"
    previous.to_parquet(path)
    compared = compare(runs, pd.concat([builtin_references(), load_references(path)]))
    assert (compared.verdict == "within").all(), compared[["verdict", "reference_source"]]


def test_tiny_model_has_no_reference(tmp_path) -> None:
    cfg = validate_config({"sweeps": [tiny_sweep((1,))]})
    (spec,) = run_specs(cfg)
    summary = {
        "status": "success",
        "step_time_mean_s": 0.05,
        "step_time_std_s": 0.0,
        "step_time_last_s": 0.05,
        "n_iterations": 50,
        "max_iteration": 49,
    }
    record = {
        "run_id": spec.run_id,
        "attempt": 1,
        "exit_code": 0,
        "log": "x",
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:00:01+00:00",
        "spec": spec.to_dict(),
    }
    write_json_atomic(tmp_path / "r.json", record)
    runs = compare(runs_table_from_records([(record, summary, None)], 1e12), builtin_references())
    assert runs.verdict.tolist() == ["no_reference"]


def test_step_time_above_the_peak_is_flagged_and_never_judged(tmp_path) -> None:
    """A step time with MFU above 100 % (0.1 s for 8B on 8 H100s) is flagged, no verdict;
    published step times stay plausible and judged."""
    published = published_8b_bf16()
    runs = compare(
        sweep_table(tmp_path, lambda g: 0.1 if g == 8 else published[g]), builtin_references()
    )
    fast = runs.set_index("gpus").loc[8]
    assert fast.mfu > 1 and fast.implausible == "mfu_above_100pct"
    assert pd.isna(fast.verdict) and pd.isna(fast.deviation_pct)
    rest = runs[runs.gpus != 8]
    assert rest.implausible.isna().all() and (rest.verdict == "within").all()
