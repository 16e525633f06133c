"""Every citation of the catalog's data with the text its lines must hold, so that a script
can check it against the reference repositories (``benchmarks/check_citations.py``).

A source ``REPO:path@ref#Lx-y[,Lz]`` cites one or more line ranges; the item that has it
also records a ``quote`` per range, in the order the sources and their ranges are written:
a short piece of the text of those lines. `` ... `` inside a quote stands for any text
between two pieces, which must come in that order. A quote is compared with its lines
joined by spaces, runs of whitespace as one space, so a quote may cross a line break.

Sources with quotes: ``parity.yaml`` (images, settings, time limits, differences),
``images.yaml``, ``gpus.yaml``, ``releases.yaml``; a performance-summary row of
``published.yaml`` cites its line, and its quote is built from what the row records (the
GPU count, tokens/s/GPU and TFLOP/s/GPU as printed).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llmbench.core.catalog.load import read_yaml
from llmbench.core.catalog.parity import CITATION, REPOS
from llmbench.core.catalog.published import load_summaries
from llmbench.errors import ConfigError

GAP = " ... "
"""In a quote: any text between the pieces on either side."""


@dataclass(frozen=True)
class Cited:
    """One cited line range and the text it must hold."""

    where: str
    repo: str
    path: str
    ref: str
    first: int
    last: int
    quote: str

    @property
    def lines(self) -> str:
        return f"L{self.first}" if self.first == self.last else f"L{self.first}-{self.last}"

    @property
    def source(self) -> str:
        return f"{self.repo}:{self.path}@{self.ref}#{self.lines}"


def ranges(citation: str) -> list[tuple[str, str, str, int, int]]:
    """(repo, path, ref, first, last) of each line range a citation string names; a
    string may hold several citations among other words (``gpus.yaml``)."""
    out = []
    for match in CITATION.finditer(citation):
        for part in match["lines"].split(","):
            first, _, last = part[1:].partition("-")
            out.append((match["repo"], match["path"], match["ref"], int(first), int(last or first)))
    return out


def normal(text: str) -> str:
    """Whitespace as single spaces, trimmed: how quotes and lines are compared."""
    return " ".join(text.split())


def holds(text: str, quote: str) -> bool:
    """Whether ``text`` has the quote's pieces, in order."""
    at = 0
    for piece in normal(quote).split(GAP.strip()):
        found = normal(text).find(piece.strip(), at)
        if found < 0:
            return False
        at = found + len(piece.strip())
    return True


def item_citations(where: str, sources: Sequence[str], quotes: Any) -> list[Cited]:
    cited = [r for source in sources for r in ranges(str(source))]
    if not isinstance(quotes, list) or len(quotes) != len(cited) or not all(quotes):
        raise ConfigError(
            f"{where}: needs quote, a list of {len(cited)} quotes (one per cited line range, in "
            f"order); has {quotes!r}"
        )
    return [Cited(where, *r, str(q)) for r, q in zip(cited, quotes, strict=True)]


def _parity_items() -> Iterator[tuple[str, Mapping[str, Any]]]:
    raw = read_yaml("parity.yaml")
    for workload, documents in raw["families"].items():
        for document, entry in documents.items():
            for part in ("images", "settings", "differences"):
                for item in entry.get(part, []):
                    name = item.get("name", item.get("ref"))
                    yield f"parity.yaml: {workload}/{document}/{part}/{name}", item


def _data_items() -> Iterator[tuple[str, Sequence[str], Any]]:
    for where, item in _parity_items():
        yield where, item["source"], item.get("quote")
    for ref, image in read_yaml("images.yaml")["images"].items():
        yield f"images.yaml: {ref}", image["source"], image.get("quote")
    for name, gpu in read_yaml("gpus.yaml")["gpu_types"].items():
        if ranges(gpu["source"]):
            yield f"gpus.yaml: {name}", [gpu["source"]], gpu.get("quote")
    for name, release in read_yaml("releases.yaml")["releases"].items():
        if ranges(release["source"]):
            yield f"releases.yaml: {name}", [release["source"]], release.get("quote")


def _summary_citations() -> list[Cited]:
    """A summary row's line must print its GPU count, tokens/s/GPU and TFLOP/s/GPU, in that
    order (the 26.x tables start the line with the system, the 25.x ones with the model
    under a system heading; a parenthesised second value may follow each number)."""
    out = []
    for row in load_summaries():
        ((repo, path, ref, first, last),) = ranges(row.source)
        quote = f"| {row.gpus} |{GAP}| {row.tokens_per_s_per_gpu:g}{GAP}| {row.tflops_per_gpu:g}"
        out.append(Cited(f"published.yaml: {row.source}", repo, path, ref, first, last, quote))
    return out


def catalog_citations() -> list[Cited]:
    """Every cited line range of the catalog's data, with its quote; ``ConfigError`` naming
    the item where a quote is missing or the count is wrong."""
    out = [c for where, src, q in _data_items() for c in item_citations(where, src, q)]
    unknown = sorted({c.repo for c in out} - set(REPOS))
    if unknown:
        raise ConfigError(f"citations name unknown repositories {unknown}; allowed: {list(REPOS)}")
    return out + _summary_citations()


def cited_repos(citations: Sequence[Cited]) -> dict[str, list[str]]:
    """Repository short name -> the refs cited in it, sorted."""
    refs: dict[str, set[str]] = {}
    for c in citations:
        refs.setdefault(c.repo, set()).add(c.ref)
    return {repo: sorted(r) for repo, r in sorted(refs.items())}
