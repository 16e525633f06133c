"""A verdict against a performance-summary row names every field in which the row differs
from the recipe the run ran (MBS, TP, PP, CP, VP, EP, FSDP, GPU count, container), and the
Why slower evidence repeats them; the pack's B200 and B300 MoE runs have a reference."""

from __future__ import annotations

import pandas as pd
import pytest

from llmbench.aggregate.explain import RunFacts, reference_row
from llmbench.aggregate.reference import builtin_references, compare
from llmbench.core.catalog.published import load_summaries
from tests.aggregate.test_reference import sweep_table
from tests.aggregate.test_reference_verdicts import bridge_log_at

PACK_IMAGE = "nvcr.io/nvidia/nemo:26.06.01"


def summary(workload: str, size: str, gpu_type: str, container: str):
    return next(
        r for r in load_summaries()
        if (r.workload, r.size, r.gpu_type, r.container) == (workload, size, gpu_type, container)
    )  # fmt: skip


def judged(tmp_path, workload, size, gpu_type, published, image=None) -> dict:
    """The v26.08 fp8 run of the row's model on ``gpu_type`` at the row's GPU count, at the
    row's own step time, compared."""
    sweep = {"workload": workload, "release": "v26.08", "sizes": [size], "dtypes": ["fp8"],
             "gpu_type": gpu_type, "scales": [published.gpus]}  # fmt: skip
    log = bridge_log_at(published.gbs, 900.0)
    runs = sweep_table(tmp_path, lambda _g: published.step_time_s, sweep, log, 4500e12,
                       container="enroot")  # fmt: skip
    if image:  # a site image (the config's `images` has no key for the v26.08 MoE families)
        runs["image"] = image
    (run,) = compare(runs, builtin_references()).to_dict("records")
    return run


def test_the_b300_deepseek_row_says_mbs_and_vp_not_only_the_container(tmp_path) -> None:
    published = summary("deepseek-v3-mbridge", "671b", "b300", "nvcr.io/nvidia/nemo:26.06")
    assert published.parallelism["mbs"] == 2 and published.parallelism["vp"] is None
    run = judged(tmp_path, "deepseek-v3-mbridge", "671b", "b300", published)
    assert (run["micro_batch_size"], run["vp"], run["ep"]) == (1, 2, 8)  # the recipe's
    assert (run["verdict"], run["verdict_basis"]) == ("within", "approximate")
    assert run["verdict_note"] == (
        "MBS 1, reference 2; VP 2, reference none; "
        f"container {PACK_IMAGE}, reference nvcr.io/nvidia/nemo:26.06"
    )
    assert run["reference_source"].endswith("performance-summary-archive.md@067f987#L115")


@pytest.mark.parametrize(
    ("workload", "size", "gpu_type", "line", "fields"),
    [
        ("deepseek-v3-mbridge", "671b", "b200", 228, "EP 8, reference 32"),
        ("qwen3-mbridge", "235b-a22b", "b300", 256, "VP 3, reference none"),
        ("qwen3-mbridge", "235b-a22b", "b200", 257, "VP 3, reference none"),
        ("qwen3-mbridge", "30b-a3b", "b200", 247, None),
    ],
)
def test_the_b200_and_b300_moe_runs_have_a_reference_naming_each_difference(
    tmp_path, workload, size, gpu_type, line, fields
) -> None:
    published = summary(workload, size, gpu_type, "nvcr.io/nvidia/nemo:26.04.01")
    run = judged(tmp_path, workload, size, gpu_type, published)
    assert run["reference_source"].endswith(f"#L{line}")
    assert run["verdict"] == "within" and run["verdict_basis"] == "approximate"
    container = f"container {PACK_IMAGE}, reference nvcr.io/nvidia/nemo:26.04.01"
    assert run["verdict_note"] == "; ".join(f for f in (fields, container) if f)


def test_a_run_is_judged_against_the_row_of_its_own_container(tmp_path) -> None:
    """DeepSeek V3 on GB300 has rows for 26.06.01 (the pack's image) and 26.08: each run
    gets the one of its image, exact, with nothing to note."""
    pack = summary("deepseek-v3-mbridge", "671b", "gb300", PACK_IMAGE)
    run = judged(tmp_path, "deepseek-v3-mbridge", "671b", "gb300", pack)
    assert run["reference_source"].endswith("performance-summary-archive.md@067f987#L50")
    assert (run["verdict_basis"], run["verdict_note"]) == ("exact", None)
    newer = summary("deepseek-v3-mbridge", "671b", "gb300", "nvcr.io/nvidia/nemo:26.08")
    (tmp_path / "x").mkdir()
    run = judged(tmp_path / "x", "deepseek-v3-mbridge", "671b", "gb300", newer,
                 image="nvcr.io/nvidia/nemo:26.08")  # fmt: skip
    assert run["reference_source"].endswith("docs/performance-summary.md@067f987#L45")
    assert (run["verdict_basis"], run["verdict_note"]) == ("exact", None)
    assert run["reference_tokens_per_s_per_gpu"] == 6288


def test_why_slower_repeats_every_difference_of_the_summary_row(tmp_path) -> None:
    published = summary("deepseek-v3-mbridge", "671b", "b300", "nvcr.io/nvidia/nemo:26.06")
    run = judged(tmp_path, "deepseek-v3-mbridge", "671b", "b300", published)
    (item,), checked = reference_row(RunFacts(row=run, results=tmp_path))
    assert item.kind == "reference_row" and "verdict_note" in checked
    assert item.detail.startswith("MBS 1, reference 2; VP 2, reference none; container ")
    assert "#L115" in item.detail


def test_a_runs_table_without_the_parallelism_columns_still_compares() -> None:
    """An older runs table (no vp, ep, fsdp): those fields are not compared."""
    published = summary("deepseek-v3-mbridge", "671b", "b300", "nvcr.io/nvidia/nemo:26.06")
    runs = pd.DataFrame([{
        "workload": "deepseek-v3-mbridge", "size": "671b", "dtype": "fp8", "gpu_type": "b300",
        "gpus": 256, "scaling": "weak", "model": "deepseek-v3", "precision": "mxfp8",
        "global_batch_size": 4096, "seq_len": 4096, "micro_batch_size": 1, "tp": 1, "pp": 8,
        "cp": 1, "image": "nvcr.io/nvidia/nemo:26.06", "status": "success",
        "step_time_mean_s": published.step_time_s,
        "tokens_per_s_per_gpu": published.tokens_per_s_per_gpu,
    }])  # fmt: skip
    (run,) = compare(runs, builtin_references()).to_dict("records")
    assert run["verdict_note"] == "MBS 1, reference 2"
