"""Writing files atomically: via a temporary file in the same folder and a rename, so a
reader never sees half a file. Text and JSON here (the standard library only, so a train
job writes its first files without loading numpy or pandas); Parquet and CSV tables in
``llmbench.files.atomic_tables``, through ``write_atomic``. A file a user asked for by name
(``create_new``) is never written over: it is linked into place, which fails on a name
that exists."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llmbench.errors import ConfigError


def write_atomic(path: str | Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` writes the whole file to ``tmp`` (beside ``path``), which then
    replaces ``path`` in one rename; a write that fails leaves no temporary file."""
    path = Path(path)
    _through_temporary(path, path.with_name(f".{path.name}.tmp{os.getpid()}"), write, os.replace)


def _through_temporary(
    path: Path, tmp: Path, write: Callable[[Path], None], place: Callable[[Path, Path], None]
) -> None:
    """``write(tmp)``, then ``place(tmp, path)``; the temporary file never stays."""
    try:
        write(tmp)
        place(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(text: str, path: str | Path) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(text))


def write_json_atomic(path: str | Path, data: Any) -> None:
    """``data`` as indented JSON with sorted keys (run records, summaries)."""
    write_text_atomic(json.dumps(data, indent=2, sort_keys=True) + "\n", path)


def new_output(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` checked as the name of a new file in an existing folder: one line
    starting with ``what`` (the option) when it is not."""
    out = Path(path)
    if out.exists() or out.is_symlink():
        raise ConfigError(f"{what}: {str(out)!r} exists; allowed: a new file name")
    folder = out.parent
    if not folder.is_dir():
        state = "is not a folder" if folder.exists() else "does not exist"
        raise ConfigError(
            f"{what}: {str(out)!r}: folder {str(folder)!r} {state}; allowed: a new file in an "
            "existing folder"
        )
    return out


def create_new(path: str | Path, write: Callable[[Path], None], what: str) -> None:
    """``write(tmp)`` writes the whole file beside ``path``, which is then linked to
    ``path``: a file of that name that appeared meanwhile is kept, and a write that
    fails (a read-only folder, a full disk) is one line starting with ``what`` and
    leaves nothing behind."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        _through_temporary(path, tmp, write, os.link)  # a link never replaces a file
    except FileExistsError:
        raise ConfigError(f"{what}: {str(path)!r} exists; allowed: a new file name") from None
    except OSError as err:
        raise ConfigError(
            f"{what}: cannot write {str(path)!r} ({err.strerror or err}); allowed: a folder "
            "this user can write, with room for the file"
        ) from None
