"""One ``.tar.zst`` file per sweep, with a manifest of every member's sha256.

``create_archive(results)`` packs a results folder under ``<sweep id>/``: run folders
(logs, run records, launch scripts, parsed steps), tables, plots, rule logs, the CPU
calibration, the history's trend plots and the report (``report.html``/``report.zip`` in
the results folder, or a file given). Left out: the stage folder (images, venv,
checkpoints), Nsight Systems reports and trace dumps unless asked for, secrets
(``llmbench.history.redact``: credential files are left out, token-looking values redacted in
every file but a binary format, and a binary file in which one shows left out), links
(never followed), files that are not regular files, and names an archive cannot carry
safely (``member_name_problem``). ``<sweep id>/MANIFEST.json``, the last member, lists
every other member with its size, sha256 (of the bytes in the archive) and number of
redactions, and the paths left out by reason (``LEFT_OUT``).
``verify_archive`` reads the archive once and checks every member against the manifest.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import IO, Any

import zstandard

from llmbench import __version__
from llmbench.aggregate.result_file import MAX_RESULT_BYTES, RESULT_FILE, check_result_bytes
from llmbench.core.results_layout import SWEEP as SWEEP_TABLE
from llmbench.errors import ConfigError
from llmbench.files.atomic import create_new, new_output
from llmbench.files.regular_file import open_regular, why_unreadable
from llmbench.history.binary_secrets import shows_secret_in
from llmbench.history.redact import (
    MAGIC_BYTES,
    Redactor,
    binary_format,
    is_secret_file,
    redact_line,
    shows_secret,
)
from llmbench.history.sweep import read_sweep

MANIFEST = "MANIFEST.json"
FORMAT = "llmbench-sweep-archive"
FORMAT_VERSION = 1
SKIPPED_DIRS = frozenset({"stage", ".snakemake"})
"""Top-level folders of results/ never archived: images, venv and checkpoints."""
PROFILE_PATTERNS = ("*.nsys-rep", "*.qdrep", "*.qdstrm", "*.sqlite")
TRACE_PATTERNS = (
    "*.pt.trace.json", "*.pt.trace.json.gz", "*trace*.json", "*trace*.json.gz", "*.trace",
    "core", "core.*", "*.dmp", "*.dump",
)  # fmt: skip
LEFT_OUT = ("profile", "trace", "secret", "link", "special", "name")
"""Why a file is left out: an Nsight report or a trace dump (unless asked for), a
secret, a symbolic link (never followed), not a regular file (a named pipe, a socket),
a name that ``member_name_problem`` refuses."""
ZSTD_LEVEL = 10
_CHUNK = 1 << 20
_SPOOL_BYTES = 64 << 20


@dataclass(frozen=True)
class Created:
    path: Path
    members: int
    left_out: dict[str, list[str]]


def member_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a member of an archive, or None: the one rule that
    ``create_archive`` applies to what it packs and ``verify_archive`` to what it reads.
    A member must stay inside the folder it is extracted to, on every system."""
    if not name or name.startswith("/"):
        return "not a relative name"
    if ".." in PurePosixPath(name).parts:
        return "a '..' part"
    if "\\" in name:
        return "a backslash (a folder separator where the archive may be extracted)"
    return None


def _kind(rel: PurePosixPath) -> str | None:
    """Why a regular file is left out by default: ``secret``, ``profile`` or ``trace``;
    None to keep it."""
    name = rel.name
    if is_secret_file(name) or shows_secret(str(rel)):
        return "secret"
    if any(rel.match(p) for p in PROFILE_PATTERNS):
        return "profile"
    if any(PurePosixPath(name).match(p) for p in TRACE_PATTERNS):
        return "trace"
    return None


def _walk_error(err: OSError) -> None:
    raise ConfigError(f"archive: cannot read {err.filename} ({why_unreadable(err)})")


def _candidates(results: Path) -> Iterator[tuple[Path, PurePosixPath, str | None]]:
    """Every file under ``results`` (links are not followed), sorted, with why it is
    left out (``LEFT_OUT``; None: it goes in unless it is a profile or trace)."""
    for folder, dirs, files in os.walk(results, onerror=_walk_error):
        here = Path(folder)
        top = here == results
        dirs[:] = sorted(d for d in dirs if not (top and d in SKIPPED_DIRS))
        for name in sorted([*files, *(d for d in dirs if (here / d).is_symlink())]):
            path = here / name
            rel = PurePosixPath(path.relative_to(results).as_posix())
            if any(p.startswith(".") and p.endswith(".tmp") for p in rel.parts):
                continue
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                yield path, rel, "link"
            elif not stat.S_ISREG(mode):
                yield path, rel, "special"
            elif member_name_problem(str(rel)):
                yield path, rel, "name"
            else:
                yield path, rel, _kind(rel)
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]


class _Hashing(io.RawIOBase):
    """A reader that hashes what passes through it."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw, self.sha = raw, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        self.sha.update(data)
        return len(data)


def _tarinfo(name: str, size: int, mtime: float, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, int(mtime), mode
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _add_file(tar: tarfile.TarFile, path: Path, name: str) -> dict[str, Any] | None:
    """Add one file, redacted unless it is of a binary format; its manifest entry. None
    (nothing added) for a binary file in which a secret shows: it cannot be redacted."""
    try:
        fh = open_regular(path)
    except OSError as err:
        raise ConfigError(f"archive: cannot read {path} ({why_unreadable(err)})") from None
    with fh:
        info = os.fstat(fh.fileno())
        mode = 0o755 if info.st_mode & 0o111 else 0o644
        kind = binary_format(fh.read(MAGIC_BYTES))
        fh.seek(0)
        if kind is not None:
            if shows_secret_in(path, kind):
                return None
            reader = _Hashing(fh)
            tar.addfile(_tarinfo(name, info.st_size, info.st_mtime, mode), reader)
            return {"path": name, "size": info.st_size, "sha256": reader.sha.hexdigest()}
        redactor = Redactor()
        lines = io.TextIOWrapper(fh, encoding="utf-8", errors="surrogateescape", newline="")
        with tempfile.SpooledTemporaryFile(_SPOOL_BYTES) as spool:
            sha = hashlib.sha256()
            for line in lines:
                data = redactor.line(line).encode("utf-8", errors="surrogateescape")
                sha.update(data)
                spool.write(data)
            size = spool.tell()
            spool.seek(0)
            tar.addfile(_tarinfo(name, size, info.st_mtime, mode), spool)
    entry: dict[str, Any] = {"path": name, "size": size, "sha256": sha.hexdigest()}
    if redactor.count:
        entry["redacted"] = redactor.count
    return entry


def create_archive(
    results: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    with_profiles: bool = False,
    with_traces: bool = False,
    report: str | os.PathLike[str] | None = None,
) -> Created:
    """Write the sweep of ``results`` to ``output`` (default ``<sweep id>.tar.zst``)."""
    results = Path(results)
    if not results.is_dir():
        raise ConfigError(f"archive: {str(results)!r} is not a folder; allowed: a results folder")
    sweep = read_sweep(results / SWEEP_TABLE)
    top = sweep["sweep_id"]
    out = new_output(output or f"{top}.tar.zst", "archive")
    if report is not None and not Path(report).is_file():
        raise ConfigError(f"archive: --report {str(report)!r} is not a file")
    keep = {"profile": with_profiles, "trace": with_traces}
    left_out: dict[str, list[str]] = {kind: [] for kind in LEFT_OUT}
    entries: list[dict[str, Any]] = []
    out_resolved = out.resolve()

    def add(tar: tarfile.TarFile, path: Path, rel: str) -> None:
        entry = _add_file(tar, path, f"{top}/{rel}")
        if entry is None:
            left_out["secret"].append(redact_line(rel)[0])
        else:
            entries.append(entry)

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as raw:
            compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
            with (
                compressor.stream_writer(raw) as zst,
                tarfile.open(fileobj=zst, mode="w|", format=tarfile.PAX_FORMAT) as tar,
            ):
                for path, rel, kind in _candidates(results):
                    if path.resolve() == out_resolved:
                        continue
                    if kind is not None and not keep.get(kind, False):
                        left_out[kind].append(redact_line(str(rel))[0])
                        continue
                    add(tar, path, str(rel))
                if report is not None:
                    add(tar, Path(report), _report_name(Path(report)))
                manifest = _manifest(sweep, entries, left_out, with_profiles, with_traces)
                tar.addfile(_tarinfo(f"{top}/{MANIFEST}", len(manifest), 0, 0o644),
                            io.BytesIO(manifest))  # fmt: skip

    create_new(out, write, "archive")
    return Created(out, len(entries), left_out)


def _report_name(report: Path) -> str:
    problem = member_name_problem(report.name) or (
        "a secret in its name" if is_secret_file(report.name) else None
    )
    if problem:
        raise ConfigError(f"archive: --report {str(report)!r}: {problem}; allowed: another name")
    return report.name


def _manifest(
    sweep: dict[str, Any],
    entries: list[dict[str, Any]],
    left_out: dict[str, list[str]],
    with_profiles: bool,
    with_traces: bool,
) -> bytes:
    data = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "llmbench_version": __version__,
        "sweep": sweep,
        "options": {"with_profiles": with_profiles, "with_traces": with_traces},
        "left_out": left_out,
        "members": entries,
    }
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


# --- verification ----------------------------------------------------------------------


@dataclass(frozen=True)
class Verified:
    path: Path
    sweep_id: str
    members: int


def verify_archive(path: str | os.PathLike[str]) -> Verified:
    """Read the archive once: every member a relative regular file, listed in the
    manifest with the same size and sha256, and every listed member present."""
    path = Path(path)
    where = f"archive {str(path)!r}"
    try:
        raw_file = open_regular(path)
    except FileNotFoundError:
        raise ConfigError(
            f"{where} does not exist; allowed: a .tar.zst from llmbench archive"
        ) from None
    except OSError as err:
        raise ConfigError(
            f"{where}: {why_unreadable(err)}; allowed: a .tar.zst from llmbench archive"
        ) from None
    seen: dict[str, tuple[int, str]] = {}
    manifest_bytes: bytes | None = None
    result_bytes = bytearray()
    try:
        with (
            raw_file as raw,
            zstandard.ZstdDecompressor().stream_reader(raw) as zst,
            tarfile.open(fileobj=zst, mode="r|") as tar,
        ):
            for member in tar:
                problem = member_name_problem(member.name)
                if not member.isfile() or problem:
                    raise ConfigError(
                        f"{where}: member {member.name!r} is not a relative regular file "
                        f"({problem or 'not a regular file'})"
                    )
                fh = tar.extractfile(member)
                assert fh is not None  # a regular file always has a reader
                if PurePosixPath(member.name).name == MANIFEST and member.name.count("/") == 1:
                    manifest_bytes = fh.read()
                    continue
                sha = hashlib.sha256()
                kept = member.name.count("/") == 1 and member.name.endswith(f"/{RESULT_FILE}")
                while chunk := fh.read(_CHUNK):
                    sha.update(chunk)
                    if kept and len(result_bytes) <= MAX_RESULT_BYTES:
                        result_bytes += chunk
                seen[member.name] = (member.size, sha.hexdigest())
    except zstandard.ZstdError as exc:
        raise ConfigError(f"{where}: not a readable zstd stream ({exc}); allowed: a .tar.zst "
                          "written by llmbench archive") from None  # fmt: skip
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ConfigError(f"{where}: corrupt tar ({exc})") from None
    verified = _check_manifest(path, where, manifest_bytes, seen)
    if f"{verified.sweep_id}/{RESULT_FILE}" in seen:  # the bytes hold; does the content?
        check_result_bytes(
            bytes(result_bytes), f"{where}: member {verified.sweep_id}/{RESULT_FILE}"
        )
    return verified


def _check_manifest(
    path: Path, where: str, manifest_bytes: bytes | None, seen: dict[str, tuple[int, str]]
) -> Verified:
    if manifest_bytes is None:
        raise ConfigError(f"{where}: no <sweep id>/{MANIFEST}; allowed: an llmbench archive")
    try:
        manifest = json.loads(manifest_bytes)
        listed = {m["path"]: (int(m["size"]), str(m["sha256"])) for m in manifest["members"]}
        sweep_id = str(manifest["sweep"]["sweep_id"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{where}: {MANIFEST} is not a manifest ({exc!r})") from None
    for name, (size, sha) in sorted(seen.items()):
        if name not in listed:
            raise ConfigError(f"{where}: member {name!r} is not in the manifest")
        if listed[name] != (size, sha):
            raise ConfigError(f"{where}: member {name!r}: size or sha256 differs from the manifest")
    missing = sorted(set(listed) - set(seen))
    if missing:
        raise ConfigError(
            f"{where}: {len(missing)} manifest member(s) missing, e.g. {missing[0]!r}"
        )
    return Verified(path, sweep_id, len(seen))
