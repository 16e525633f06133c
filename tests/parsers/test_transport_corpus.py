"""The transport reader against a corpus of real NCCL output (tests/fixtures/nccl-debug/).

Every file is an excerpt posted in a public issue, pull request or documentation page, with
its source on its first line. ``expected.yaml`` gives, for each file, every field as a
careful reader reads it off the lines (and off what the source says about the run: the
``given`` node count and site fabric an operator would pass), with why; it was written
before the reader ran on the files. The reader must agree on every field of every file, say
why, and quote the lines it relied on; and no extractor of the reader may be dead weight:
dropping any one of them changes the answer for at least one file.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmbench.parsers.transport import EXTRACTORS, FIELDS, UNKNOWN, read_transport
from tests.parsers.transport_corpus_table import PAGE, page

CORPUS = Path(__file__).parents[1] / "fixtures" / "nccl-debug"
CASES: list[dict[str, Any]] = yaml.safe_load((CORPUS / "expected.yaml").read_text())["cases"]
NOT_CORPUS = ("README.md", "expected.yaml")


def answers(case: dict[str, Any], extractors: tuple = EXTRACTORS) -> dict[str, str]:
    given = case.get("given") or {}
    report = read_transport(
        [CORPUS / case["file"]],
        nodes=given.get("nodes"),
        fabric=given.get("fabric"),
        extractors=extractors,
    )
    return {name: report.fields[name].value for name in FIELDS}


@cache
def full_answers(file: str) -> dict[str, str]:
    return answers(next(c for c in CASES if c["file"] == file))


def test_every_file_has_a_case_a_source_and_a_reason_per_field() -> None:
    files = sorted(p.name for p in CORPUS.iterdir() if p.name not in NOT_CORPUS)
    assert files == sorted(c["file"] for c in CASES)
    assert len(files) >= 20
    readme = (CORPUS / "README.md").read_text()
    for case in CASES:
        first = (CORPUS / case["file"]).read_text().splitlines()[0]
        assert first.startswith("# source: http"), case["file"]
        assert case["source"] in first and f"`{case['file']}`" in readme
        assert set(case["expected"]) == set(FIELDS), case["file"]
        assert all(v["why"].strip() for v in case["expected"].values()), case["file"]


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_header_lines_hold_nothing_the_reader_takes_for_a_record(
    case: dict[str, Any], tmp_path: Path
) -> None:
    lines = (CORPUS / case["file"]).read_text().splitlines(keepends=True)
    header = "".join(line for line in lines if line.startswith("# ") and "Rank " not in line)
    (tmp_path / "header.log").write_text(header)
    report = read_transport([tmp_path / "header.log"])
    assert {name: report.fields[name].value for name in FIELDS} == dict.fromkeys(FIELDS, UNKNOWN)


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_corpus_file_reads_as_a_careful_reader_reads_it(case: dict[str, Any]) -> None:
    want = {name: case["expected"][name]["value"] for name in FIELDS}
    got = full_answers(case["file"])
    differ = {
        name: (got[name], want[name], case["expected"][name]["why"])
        for name in FIELDS
        if got[name] != want[name]
    }
    assert not differ, differ


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_every_field_says_why_and_quotes_its_lines(case: dict[str, Any]) -> None:
    given = case.get("given") or {}
    path = CORPUS / case["file"]
    report = read_transport(
        [path], nodes=given.get("nodes"), fabric=given.get("fabric"), base=CORPUS
    )
    lines = path.read_text(errors="replace").splitlines()
    for name in FIELDS:
        field = report.fields[name]
        assert field.why.strip(), name
        for quoted in field.evidence:
            assert quoted.file == case["file"]
            assert quoted.text and quoted.text in lines[quoted.line - 1], (name, quoted)
    for name in ("net_transport", "gdr", "nvls", "collnet", "nccl_version"):
        field = report.fields[name]
        assert (field.value == UNKNOWN) or field.evidence, (name, field)


@pytest.mark.parametrize("name", [e.name for e in EXTRACTORS])
def test_dropping_any_extractor_changes_a_corpus_answer(name: str) -> None:
    """A mutation test driven by the extractor table: a rule no corpus file needs is
    either dead or untested, and a new rule is covered the day it is added."""
    kept = tuple(e for e in EXTRACTORS if e.name != name)
    assert len(kept) == len(EXTRACTORS) - 1
    changed = [c["file"] for c in CASES if answers(c, kept) != full_answers(c["file"])]
    assert changed, f"no corpus file needs the extractor {name!r}"


def test_the_corpus_page_is_the_generated_table() -> None:
    """docs/transport-corpus.md shows every file with its source, the expected answer and
    llmbench's (``python -m tests.parsers.transport_corpus_table`` writes it)."""
    assert PAGE.read_text() == page()
    assert f"Agreement: {len(CASES)} of {len(CASES)} files on every field" in PAGE.read_text()


def test_docs_name_every_extractor() -> None:
    """docs/transport.md's extractor table lists every rule of the reader."""
    text = (Path(__file__).parents[2] / "docs" / "transport.md").read_text()
    missing = [e.name for e in EXTRACTORS if f"| `{e.name}` |" not in text]
    assert not missing, missing
