"""Every citation of the catalog's data records the text of its lines, and the checker
(``benchmarks/check_citations.py``) reads them from a git clone: a right citation passes, a
wrong line, a missing ref or path and a repository without a clone are misses."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks import check_citations
from llmbench.core.catalog.citations import (
    Cited,
    catalog_citations,
    holds,
    item_citations,
    ranges,
)
from llmbench.core.catalog.parity import families
from llmbench.errors import ConfigError

CITED = catalog_citations()


def test_every_cited_line_range_has_a_short_quote() -> None:
    assert len(CITED) > 1800
    for c in CITED:
        assert 1 <= c.first <= c.last, c
        assert c.quote.strip() and len(c.quote) <= 200, c
    # the published rows' lines are checked too, by the numbers the rows record
    assert sum(c.where.startswith("published.yaml") for c in CITED) == 36
    assert {c.where.split(":")[0] for c in CITED} == {
        "parity.yaml", "images.yaml", "gpus.yaml", "releases.yaml", "published.yaml",
    }  # fmt: skip


def test_a_missing_or_miscounted_quote_is_named() -> None:
    sources = ["MB:a.py@abc1234#L1-2,L5", "EP:b.sh@v1.0#L3"]
    assert len(item_citations("x", sources, ["one", "two", "three"])) == 3
    with pytest.raises(ConfigError, match=r"x: needs quote, a list of 3 quotes .* has \['one'\]"):
        item_citations("x", sources, ["one"])
    with pytest.raises(ConfigError, match="needs quote"):
        item_citations("x", sources, None)


def test_a_quote_holds_in_order_across_lines_and_gaps() -> None:
    text = 'if x:\n    cfg.model.a = "b"   # note\n    cfg.c = 3'
    assert holds(text, 'cfg.model.a = "b" # note cfg.c = 3')  # whitespace as one space
    assert holds(text, "if x: ... cfg.c = 3")
    assert not holds(text, "cfg.c = 3 ... if x:")  # pieces in order
    assert not holds(text, 'cfg.model.a = "c"')


def test_ranges_of_a_source_and_of_prose_holding_citations() -> None:
    assert ranges("MB:x/y.py@b50da4c#L3,L5-7") == [
        ("MB", "x/y.py", "b50da4c", 3, 3), ("MB", "x/y.py", "b50da4c", 5, 7),
    ]  # fmt: skip
    assert ranges("doc.txt; NVFP4 EP:README.md@v26.08.00#L372-382") == [
        ("EP", "README.md", "v26.08.00", 372, 382)
    ]


def test_no_setting_cites_another_familys_perf_config() -> None:
    """A DeepSeek setting shown by the Qwen builder's line (or the reverse) is a wrong
    citation even where that line holds the same value."""
    own = {"qwen3-mbridge": "configs/qwen/", "deepseek-v3-mbridge": "configs/deepseek/",
           "llama3.1-mbridge": "configs/llama"}  # fmt: skip
    for workload, documents in families().items():
        for item in documents.get("exemplar-v26.08", {}).get("settings", []):
            for source in item["source"]:
                if "scripts/performance/configs/" in source:
                    assert own[workload] in source, (workload, item["name"], source)


# --- the checker, on a repository made here ---------------------------------------------


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(repo), "PATH": "/usr/bin:/bin"}  # fmt: skip
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env=env, check=True)  # fmt: skip
    return proc.stdout


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    repo = tmp_path / "ref"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "scripts").mkdir()
    (repo / "scripts" / "launch.sh").write_text(
        'GPU_TYPE=${GPU_TYPE,,}\nif [[ $GPU_TYPE == "h100" ]]; then\n'
        '    TIME_LIMIT=${TIME_LIMIT:-"01:30:00"}\nfi\n'
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "tag", "v1.0")
    (repo / "scripts" / "launch.sh").write_text("moved\n")
    git(repo, "commit", "-q", "-am", "two")  # HEAD differs: the tag's text is what counts
    return repo


def cited(lines: str, quote: str, ref: str = "v1.0", path: str = "scripts/launch.sh") -> Cited:
    ((repo, p, r, first, last),) = ranges(f"EP:{path}@{ref}#{lines}")
    return Cited("test item", repo, p, r, first, last, quote)


def test_a_right_citation_passes(clone: Path, capsys) -> None:
    ok = [cited("L2-4", 'TIME_LIMIT=${TIME_LIMIT:-"01:30:00"}'), cited("L1", "GPU_TYPE ... ,,}")]
    misses, checked = check_citations.check(ok, {"EP": clone})
    assert (misses, checked) == ([], 2)
    assert check_citations.main(["--repo", f"EP={clone}"], citations=ok) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["misses"] == 0 and counts["checked"] == 2
    assert counts["repos"]["EP"] == {"refs": ["v1.0"], "ranges": 2, "misses": 0}


def test_a_wrong_line_fails_and_says_what_is_there(clone: Path, capsys) -> None:
    wrong = cited("L1", 'TIME_LIMIT=${TIME_LIMIT:-"01:30:00"}')
    (miss,), _ = check_citations.check([wrong], {"EP": clone})
    assert (miss.repo, miss.ref, miss.path, miss.lines) == ("EP", "v1.0", "scripts/launch.sh", "L1")
    assert miss.expected == wrong.quote and miss.found == "GPU_TYPE=${GPU_TYPE,,}"
    assert check_citations.main(["--repo", f"EP={clone}"], citations=[wrong]) == 1
    out = capsys.readouterr().out
    assert out.startswith("MISS EP@v1.0:scripts/launch.sh#L1 (test item)")
    assert "expected: 'TIME_LIMIT" in out and "found:    'GPU_TYPE" in out


@pytest.mark.parametrize(
    ("citation", "found"),
    [
        (cited("L2", "x", ref="v9.9"), "git show v9.9:scripts/launch.sh: fatal"),
        (cited("L2", "x", path="scripts/gone.sh"), "git show v1.0:scripts/gone.sh: fatal"),
        (cited("L4-9", "fi"), "the file has 4 lines"),
    ],
    ids=["missing ref", "missing path", "past the end"],
)
def test_a_missing_ref_path_or_line_fails(clone: Path, citation: Cited, found: str) -> None:
    (miss,), _ = check_citations.check([citation], {"EP": clone})
    assert miss.found.startswith(found)


def test_a_repository_without_a_clone_is_a_miss(clone: Path) -> None:
    (miss,), _ = check_citations.check([cited("L1", "GPU_TYPE")], {"MB": clone})
    assert miss.found == "no clone given (--repo EP=PATH)"


def test_a_bad_repo_option_is_one_line(tmp_path: Path, capsys) -> None:
    assert check_citations.main(["--repo", "EP"], citations=[]) == 2
    assert "expected NAME=PATH" in capsys.readouterr().err
    assert check_citations.main(["--repo", f"EP={tmp_path / 'none'}"], citations=[]) == 2
    assert "does not exist" in capsys.readouterr().err
