"""benchmarks/dry_run_parts.py edits the real train rule: each variant takes out what its
row names and nothing else, and an edit that no longer applies stops the benchmark."""

from __future__ import annotations

import pytest

from benchmarks.dry_run_parts import RULE_FILE, VARIANTS, edited_rule, split_rule
from tests.helpers import REPO

TRAIN_RULE = (REPO / RULE_FILE).read_text()


def entries(lines: list[str]) -> set[str]:
    """Names a directive's body declares (``name=...`` lines)."""
    body = [line.strip() for line in lines[1:]]
    return {line.split("=")[0] for line in body if "=" in line and not line.startswith("#")}


def variant(label: str) -> dict[str, list[str]]:
    head, blocks, tail = split_rule(edited_rule(TRAIN_RULE, VARIANTS[label]))
    assert head == "rule train:\n" and tail == ""
    return blocks


def test_the_rule_as_it_is_is_left_as_it_is() -> None:
    assert edited_rule(TRAIN_RULE, VARIANTS["as it is"]) == TRAIN_RULE


def test_each_variant_takes_out_what_it_names_and_nothing_else() -> None:
    _, whole, _ = split_rule(TRAIN_RULE)
    assert entries(whole["output"]) == {"record", "summary", "steps", "telemetry", "energy"}
    assert {"input", "params", "script"} <= set(whole)

    one_output = variant("1 output instead of 5")
    assert entries(one_output["output"]) == {"record"}
    assert {k: v for k, v in one_output.items() if k != "output"} == {
        k: v for k, v in whole.items() if k != "output"
    }
    assert set(variant("no inputs (image, venv, preflight gate)")) == set(whole) - {"input"}
    assert entries(variant("no Slurm resources")["resources"]) == {"bench", "llmbench_try"}
    shell = variant("`shell:` instead of `script:`")
    assert set(shell) == set(whole) - {"script"} | {"shell"}

    merged = variant("1 output, 1 input, 1 param, the Slurm resources (merged as far as possible)")
    assert set(merged) == set(whole)
    assert entries(merged["output"]) == {"record"} and entries(merged["params"]) == {"run"}
    assert [line.strip() for line in merged["input"][1:]] == ["SWEEP.preflight_exclude,"]
    slurm = entries(whole["resources"]) - {"bench", "llmbench_try"}
    assert entries(merged["resources"]) == slurm and "gres" in slurm
    assert merged["script"] == whole["script"]

    floor = variant("1 output, no inputs, resources, params or script")
    assert set(floor) == set(whole) - {"input", "params", "script"} | {"shell"}
    assert entries(floor["output"]) == {"record"} and entries(floor["resources"]) == {"bench"}
    assert floor["log"] == whole["log"] and floor["threads"] == whole["threads"]


def test_an_edit_that_finds_nothing_stops_the_benchmark() -> None:
    without_inputs = edited_rule(TRAIN_RULE, ("no_inputs",))
    with pytest.raises(SystemExit, match="no_inputs: no directive 'input'"):
        edited_rule(without_inputs, ("no_inputs",))
    with pytest.raises(SystemExit, match="not every one of"):
        edited_rule(edited_rule(TRAIN_RULE, ("one_output",)).replace("record=", "rec="),
                    ("one_output",))  # fmt: skip
