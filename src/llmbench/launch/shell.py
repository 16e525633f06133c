"""Shell words for rendered scripts: literals are quoted, ``Raw`` words are written as is."""

from __future__ import annotations

import shlex
from collections.abc import Sequence


class Raw(str):
    """Shell text written verbatim, e.g. ``"$PYTHON"``: the author quotes it."""

    __slots__ = ()


Word = str | Raw


def join(words: Sequence[Word]) -> str:
    """One command line: literal words shlex-quoted, ``Raw`` words unchanged."""
    return " ".join(w if isinstance(w, Raw) else shlex.quote(w) for w in words)
