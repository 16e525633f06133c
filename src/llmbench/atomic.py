"""Writing files atomically: via a temporary file in the same folder and a rename, so a
reader never sees half a file. Text and JSON here (the standard library only, so a train
job writes its first files without loading numpy or pandas); Parquet and CSV tables in
``llmbench.atomic_tables``, through ``write_atomic``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_atomic(path: str | Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` writes the whole file to ``tmp`` (beside ``path``), which then
    replaces ``path`` in one rename; a write that fails (a full disk) leaves no ``tmp``."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(text: str, path: str | Path) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(text))


def write_json_atomic(path: str | Path, data: Any) -> None:
    """``data`` as indented JSON with sorted keys (run records, summaries)."""
    write_text_atomic(json.dumps(data, indent=2, sort_keys=True) + "\n", path)
