"""The status rules of a log with step lines: an ordered list, as the docstring says."""

from __future__ import annotations

import re

from llmbench.parsers import summary
from llmbench.parsers.summary import STATUS_RULES, RunFacts, summarize
from llmbench.parsers.vocabulary import Framework, Reason


def test_the_docstring_numbers_the_rules_in_their_order() -> None:
    doc = summary.__doc__ or ""
    numbered = re.findall(r"^(\d+)\. ``(\w+)``", doc, flags=re.MULTILINE)
    assert [name for _, name in numbered] == [name for name, _ in STATUS_RULES]
    assert [int(n) for n, _ in numbered] == list(range(1, len(STATUS_RULES) + 1))


def test_an_earlier_rule_wins_over_a_later_one() -> None:
    """A NaN loss in a log whose launcher failed is ``invalid`` (rule 2 before rule 5),
    and a complete log with a failure after its last step is a success (6 before 7)."""
    rows = {i: {"step_time_s": 1.0, "loss": 2.0} for i in range(1, 21)}
    nan = {**rows, 3: {"step_time_s": 1.0, "loss": float("nan")}}
    facts = RunFacts(Framework.MEGATRON, nan, job_outcome="FAILED")
    judged = summarize(facts, (1, 20), expected_steps=20)
    assert (judged.status, judged.reason) == ("invalid", "nan_loss")
    late = RunFacts(Framework.MEGATRON, rows, failure=(Reason.NCCL_TIMEOUT, "late"))
    judged = summarize(late, (5, 20), expected_steps=20)
    assert (judged.status, judged.reason) == ("success", "")
    assert judged.extra["failure_after_finish"] == "nccl_timeout"
