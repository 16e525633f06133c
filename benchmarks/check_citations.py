"""Check every citation of the catalog's data against local clones of the repositories it
cites: each cited line range must exist at the cited ref and hold its recorded quote.

    python -m benchmarks.check_citations --repo MB=PATH --repo EP=PATH --repo NeMo=PATH \
        --repo DGXC=PATH --repo MCore=PATH --repo MT=PATH [--json out.json]

``NAME`` is a citation's short repository name (``llmbench.core.catalog.parity.REPOS``:
MB = NVIDIA-NeMo/Megatron-Bridge, EP = NVIDIA/exemplar-performance, NeMo = NVIDIA/NeMo,
DGXC = NVIDIA/dgxc-benchmarking, MCore = NVIDIA/Megatron-LM, MT = AI-Hypercomputer/maxtext);
``PATH`` a git clone (or bare mirror) holding the cited refs. Each file is read with
``git show REF:PATH``. Prints one line per miss (repository, ref, path, lines, the quote
expected and the text there), then the counts; exits 1 on any miss, a repository without a
clone included. The citations and their quotes: ``llmbench.core.catalog.citations``.
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from llmbench.core.catalog.citations import Cited, catalog_citations, cited_repos, holds, normal
from llmbench.errors import ConfigError

SHOWN_CHARS = 160
"""How much of the cited lines a miss shows."""


@dataclass(frozen=True)
class Miss:
    where: str
    repo: str
    ref: str
    path: str
    lines: str
    expected: str
    found: str

    def line(self) -> str:
        return (
            f"MISS {self.repo}@{self.ref}:{self.path}#{self.lines} ({self.where})\n"
            f"     expected: {self.expected!r}\n     found:    {self.found!r}"
        )


@functools.cache
def _file(clone: Path, ref: str, path: str) -> list[str] | str:
    """The file's lines at ``ref``, or why it cannot be read (a missing ref or path)."""
    proc = subprocess.run(
        ["git", "-C", str(clone), "show", f"{ref}:{path}"],
        capture_output=True, text=True, errors="replace", check=False,
    )  # fmt: skip
    if proc.returncode:
        lines = proc.stderr.strip().splitlines()
        return f"git show {ref}:{path}: {lines[-1] if lines else 'failed'}"
    return proc.stdout.splitlines()


def check(citations: Iterable[Cited], clones: Mapping[str, Path]) -> tuple[list[Miss], int]:
    """The misses among ``citations`` (``clones``: short repository name -> clone), and how
    many were checked."""
    misses, checked = [], 0
    for c in citations:
        checked += 1
        clone = clones.get(c.repo)
        if clone is None:
            found = f"no clone given (--repo {c.repo}=PATH)"
            misses.append(Miss(c.where, c.repo, c.ref, c.path, c.lines, c.quote, found))
            continue
        text = _file(clone, c.ref, c.path)
        if isinstance(text, str):
            misses.append(Miss(c.where, c.repo, c.ref, c.path, c.lines, c.quote, text))
            continue
        if c.last > len(text) or c.first < 1 or c.first > c.last:
            found = f"the file has {len(text)} lines"
            misses.append(Miss(c.where, c.repo, c.ref, c.path, c.lines, c.quote, found))
            continue
        there = " ".join(text[c.first - 1 : c.last])
        if not holds(there, c.quote):
            found = normal(there)[:SHOWN_CHARS]
            misses.append(Miss(c.where, c.repo, c.ref, c.path, c.lines, c.quote, found))
    return misses, checked


def _clones(pairs: Sequence[str]) -> dict[str, Path]:
    clones = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--repo {pair!r}: expected NAME=PATH, e.g. MB=../Megatron-Bridge")
        if not Path(path).exists():
            raise ConfigError(f"--repo {pair!r}: {path} does not exist")
        clones[name] = Path(path)
    return clones


def main(argv: Sequence[str] | None = None, citations: Sequence[Cited] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--json", type=Path, help="also write the counts and misses here")
    args = parser.parse_args(argv)
    try:
        clones = _clones(args.repo)
        cited = list(catalog_citations() if citations is None else citations)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    misses, checked = check(cited, clones)
    for miss in misses:
        print(miss.line())
    refs = cited_repos(cited)
    counts = {
        "checked": checked,
        "misses": len(misses),
        "files": len({(c.repo, c.ref, c.path) for c in cited}),
        "repos": {repo: {"refs": r, "ranges": sum(c.repo == repo for c in cited),
                         "misses": sum(m.repo == repo for m in misses)}
                  for repo, r in refs.items()},
    }  # fmt: skip
    print(json.dumps(counts, indent=2))
    if args.json:
        args.json.write_text(json.dumps({**counts, "missed": [asdict(m) for m in misses]}))
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
