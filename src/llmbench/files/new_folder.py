"""A folder a user names, written complete or not at all: filled under a temporary name
beside it and renamed into place (or, when it already exists empty, filled where it is and
emptied again on failure). A folder that holds anything is refused: nothing a user has is
overwritten. Every refusal and failure is one ``ConfigError`` line naming the folder."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from llmbench.errors import ConfigError

T = TypeVar("T")
ALLOWED = "allowed: a new or empty folder where this user can write"


def _refuse(flag: str, path: Path, why: str) -> ConfigError:
    return ConfigError(f"{flag} {path}: {why}; {ALLOWED}")


def _checked(path: Path, flag: str) -> Path | None:
    """The existing empty folder ``path`` names (through a link), None when it does not
    exist; refused when it holds anything, is not a folder, or is a dangling link."""
    if path.is_symlink() and not path.exists():
        raise _refuse(flag, path, "a symbolic link to a path that does not exist")
    if not path.exists():
        return None
    if not path.is_dir():
        raise ConfigError(f"{flag} {path}: not an empty folder; allowed: a new or empty folder")
    try:
        empty = not any(path.iterdir())
    except OSError as err:
        raise _refuse(flag, path, f"cannot be read ({err.strerror})") from None
    if not empty:
        raise ConfigError(f"{flag} {path}: not an empty folder; allowed: a new or empty folder")
    return path.resolve()


def _make_parents(folder: Path, created: list[Path]) -> None:
    """Create ``folder`` and its missing parents, each added to ``created`` once made."""
    missing = []
    for each in [folder, *folder.parents]:
        if each.exists() or each.is_symlink():
            break
        missing.append(each)
    for each in reversed(missing):
        each.mkdir()
        created.append(each)


def _remove(created: list[Path]) -> None:
    for each in reversed(created):
        try:
            each.rmdir()
        except OSError:
            return


def write_new_folder(name: str, write: Callable[[Path], T], flag: str = "-o") -> tuple[Path, T]:
    """``write(folder)`` fills a folder; the folder ``name`` then holds exactly that, or,
    when anything fails (no room, read-only, a file in the way), stays as it was, with the
    parents this call made removed again. Returns the folder and what ``write`` returned."""
    if not name.strip():
        raise ConfigError(f"{flag} {name!r}: an empty folder name; {ALLOWED}")
    path = Path(name)
    existing = _checked(path, flag)
    if existing is not None:
        return path, _fill_in_place(existing, write, flag, path)
    created: list[Path] = []
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part")
    try:
        _make_parents(path.parent, created)
        tmp.mkdir()
        result = write(tmp)
        tmp.rename(path)
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove(created)
        raise _refuse(flag, path, f"cannot be written ({err.strerror or err})") from None
    return path, result


def _fill_in_place(folder: Path, write: Callable[[Path], T], flag: str, shown: Path) -> T:
    try:
        return write(folder)
    except OSError as err:
        for each in folder.iterdir():  # it was empty: everything in it is this call's
            if each.is_dir() and not each.is_symlink():
                shutil.rmtree(each)
            else:
                each.unlink()
        raise _refuse(flag, shown, f"cannot be written ({err.strerror or err})") from None
