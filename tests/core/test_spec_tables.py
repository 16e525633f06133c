"""Every derived number of every published table (and worked example) is reproduced from
its step time, or listed with its disagreement in docs/spec-errata.md."""

from __future__ import annotations

import pytest

from llmbench.core.catalog import load_catalog, published_results
from tests.core.published_checks import agrees, disagreements, load_examples, reproduce
from tests.helpers import REPO

ERRATA = REPO / "docs" / "spec-errata.md"
CAT = load_catalog()
RESULTS = published_results()


def _errata_rows() -> list[dict[str, str]]:
    text = ERRATA.read_text(encoding="utf-8")
    block = text.split("<!-- errata:begin -->")[1].split("<!-- errata:end -->")[0]
    lines = [ln for ln in block.strip().splitlines() if ln.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [
        dict(zip(header, (c.strip() for c in ln.strip("|").split("|")), strict=True))
        for ln in lines[2:]
    ]


def _key(row: dict[str, str]) -> tuple:
    return (
        row["source"], row["kind"], row["workload"], row["size"], row["dtype"],
        row["gpu_type"], int(row["gpus"]), row["metric"],
    )  # fmt: skip


def test_every_table_is_present():
    tables = {(r.workload, r.size, r.dtype) for r in RESULTS}
    assert len(RESULTS) == 70
    assert ("llama3.1-nemo", "405b-proxy", "fp8") in tables
    assert {r.source for r in RESULTS} == {
        "llama31-nemo2-h100.txt",
        "nemotron4-nemo2-h100.txt",
        "maxtext-llama2-70b-h100.txt",
    }


@pytest.mark.parametrize("result", RESULTS, ids=lambda r: "-".join(map(str, r.key())))
def test_published_gbs_matches_catalog_row(result):
    row = CAT.row(result.workload, result.size, result.dtype, result.gpu_type, result.gpus,
                  source=result.source if result.size == "340b" else None)  # fmt: skip
    assert row.gbs == result.gbs


@pytest.mark.parametrize(
    "result", [*RESULTS, *load_examples()], ids=lambda r: f"{r.kind}-{r.source}-{r.key()}"
)
def test_reproduced_or_listed_as_erratum(result):
    errata_keys = {_key(r) for r in _errata_rows()}
    computed = reproduce(result, CAT)
    assert computed, "nothing to compare"
    for metric, value in computed.items():
        printed = getattr(result, metric)
        key = (result.source, result.kind, *result.key(), metric)
        if key in errata_keys:
            assert not agrees(printed, value, result.decimals[metric])
        else:
            assert agrees(printed, value, result.decimals[metric]), (metric, printed, value)


def test_errata_document_lists_exactly_the_disagreements():
    listed = _errata_rows()
    actual = {d.key(): d for d in disagreements()}
    assert {_key(r) for r in listed} == set(actual)
    for row in listed:
        d = actual[_key(row)]
        assert float(row["printed"]) == pytest.approx(d.printed)
        assert float(row["computed"]) == pytest.approx(d.computed, abs=5e-5, rel=1e-9)
        assert float(row["difference"]) == pytest.approx(d.difference, abs=5e-5, rel=1e-9)


def test_errata_document_names_no_unknown_metric():
    metrics = {r["metric"] for r in _errata_rows()}
    allowed = {
        "tokens_per_s",
        "mfu_pct",
        "days_to_train",
        "attention_flops_per_token",
        "mlp_flops_per_token",
        "embedding_flops_per_token",
        "model_flops_per_sample",
    }
    assert metrics <= allowed
