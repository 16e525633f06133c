"""One ``.tar.zst`` file per sweep, with a manifest of every member's sha256.

``create_archive(results)`` packs a results folder under ``<sweep id>/``: run folders
(logs, run records, launch scripts, parsed steps), tables, plots, rule logs, the CPU
calibration, the history's trend plots and the report (``report.html``/``report.zip`` in
the results folder, or a file given). Left out: the stage folder (images, venv,
checkpoints), Nsight Systems reports and trace dumps unless asked for, and secrets
(``llmbench.redact``: credential files are left out, token-looking values in text files
redacted). ``<sweep id>/MANIFEST.json``, the last member, lists every other member with
its size, sha256 (of the bytes in the archive) and number of redactions, and the paths
left out (profile, trace, secret).
``verify_archive`` reads the archive once and checks every member against the manifest.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import IO, Any

import zstandard

from llmbench import __version__
from llmbench.errors import ConfigError
from llmbench.history.sweep import SWEEP_FILE, read_sweep
from llmbench.redact import is_secret_file, is_text, redact_text

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
REPORT_NAMES = ("report.html", "report.zip")
ZSTD_LEVEL = 10
_CHUNK = 1 << 20
_SPOOL_BYTES = 64 << 20


@dataclass(frozen=True)
class Created:
    path: Path
    members: int
    left_out: dict[str, list[str]]


def _kind(rel: PurePosixPath) -> str | None:
    """Why a file is left out by default: ``profile`` or ``trace``; None to keep it."""
    name = rel.name
    if any(rel.match(p) for p in PROFILE_PATTERNS):
        return "profile"
    if any(PurePosixPath(name).match(p) for p in TRACE_PATTERNS):
        return "trace"
    return None


def _candidates(results: Path) -> Iterator[tuple[Path, PurePosixPath]]:
    for path in sorted(results.rglob("*")):
        rel = PurePosixPath(path.relative_to(results).as_posix())
        if rel.parts[0] in SKIPPED_DIRS or any(p.startswith(".") and p.endswith(".tmp")
                                               for p in rel.parts):  # fmt: skip
            continue
        if path.is_file() and not path.is_symlink():
            yield path, rel


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


def _add_file(tar: tarfile.TarFile, path: Path, name: str) -> dict[str, Any]:
    """Add one file (redacted if it is text); its manifest entry."""
    stat = path.stat()
    mode = 0o755 if stat.st_mode & 0o111 else 0o644
    with open(path, "rb") as fh:
        head = fh.read(8192)
        fh.seek(0)
        if not is_text(head):
            reader = _Hashing(fh)
            tar.addfile(_tarinfo(name, stat.st_size, stat.st_mtime, mode), reader)
            return {"path": name, "size": stat.st_size, "sha256": reader.sha.hexdigest()}
        lines, count = redact_text(io.TextIOWrapper(fh, encoding="utf-8", errors="surrogateescape",
                                                    newline="").readlines())  # fmt: skip
    with tempfile.SpooledTemporaryFile(_SPOOL_BYTES) as spool:
        sha = hashlib.sha256()
        for line in lines:
            data = line.encode("utf-8", errors="surrogateescape")
            sha.update(data)
            spool.write(data)
        size = spool.tell()
        spool.seek(0)
        tar.addfile(_tarinfo(name, size, stat.st_mtime, mode), spool)
    entry = {"path": name, "size": size, "sha256": sha.hexdigest()}
    if count:
        entry["redacted"] = count
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
    sweep = read_sweep(results / "tables" / SWEEP_FILE)
    top = sweep["sweep_id"]
    out = Path(output) if output else Path(f"{top}.tar.zst")
    if out.exists():
        raise ConfigError(f"archive: {str(out)!r} exists; allowed: a new file name")
    if report is not None and not Path(report).is_file():
        raise ConfigError(f"archive: --report {str(report)!r} is not a file")
    keep = {"profile": with_profiles, "trace": with_traces}
    left_out: dict[str, list[str]] = {"profile": [], "trace": [], "secret": []}
    entries: list[dict[str, Any]] = []
    tmp = out.with_name(f".{out.name}.{secrets.token_hex(4)}.tmp")
    out_resolved = out.resolve()
    try:
        with open(tmp, "wb") as raw:
            compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
            with (
                compressor.stream_writer(raw) as zst,
                tarfile.open(fileobj=zst, mode="w|", format=tarfile.PAX_FORMAT) as tar,
            ):
                for path, rel in _candidates(results):
                    if path.resolve() == out_resolved:
                        continue
                    kind = "secret" if is_secret_file(rel.name) else _kind(rel)
                    if kind is not None and not keep.get(kind, False):
                        left_out[kind].append(str(rel))
                        continue
                    entries.append(_add_file(tar, path, f"{top}/{rel}"))
                if report is not None:
                    entries.append(_add_file(tar, Path(report), f"{top}/{Path(report).name}"))
                manifest = _manifest(sweep, entries, left_out, with_profiles, with_traces)
                tar.addfile(_tarinfo(f"{top}/{MANIFEST}", len(manifest), 0, 0o644),
                            io.BytesIO(manifest))  # fmt: skip
        os.link(tmp, out)  # refuses to replace a file that appeared meanwhile
    except FileExistsError:
        raise ConfigError(f"archive: {str(out)!r} exists; allowed: a new file name") from None
    finally:
        tmp.unlink(missing_ok=True)
    return Created(out, len(entries), left_out)


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


def _safe(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return bool(parts) and not name.startswith("/") and ".." not in parts and "\\" not in name


def verify_archive(path: str | os.PathLike[str]) -> Verified:
    """Read the archive once: every member a relative regular file, listed in the
    manifest with the same size and sha256, and every listed member present."""
    path = Path(path)
    where = f"archive {str(path)!r}"
    if not path.is_file():
        raise ConfigError(f"{where} does not exist; allowed: a .tar.zst from llmbench archive")
    seen: dict[str, tuple[int, str]] = {}
    manifest_bytes: bytes | None = None
    try:
        with (
            open(path, "rb") as raw,
            zstandard.ZstdDecompressor().stream_reader(raw) as zst,
            tarfile.open(fileobj=zst, mode="r|") as tar,
        ):
            for member in tar:
                if not member.isfile() or not _safe(member.name):
                    raise ConfigError(
                        f"{where}: member {member.name!r} is not a relative regular file"
                    )
                fh = tar.extractfile(member)
                assert fh is not None  # a regular file always has a reader
                if PurePosixPath(member.name).name == MANIFEST and member.name.count("/") == 1:
                    manifest_bytes = fh.read()
                    continue
                sha = hashlib.sha256()
                while chunk := fh.read(_CHUNK):
                    sha.update(chunk)
                seen[member.name] = (member.size, sha.hexdigest())
    except zstandard.ZstdError as exc:
        raise ConfigError(f"{where}: not a readable zstd stream ({exc}); allowed: a .tar.zst "
                          "written by llmbench archive") from None  # fmt: skip
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ConfigError(f"{where}: corrupt tar ({exc})") from None
    return _check_manifest(path, where, manifest_bytes, seen)


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
