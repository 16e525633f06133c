"""The sweep record: who, where and with what one table-producing invocation ran.

Stamped by the aggregate job (``results/tables/sweep.json``) every time it builds the
tables; the runs table carries its ``sweep_id``. Fields:

- ``sweep_id``: ``<UTC time %Y%m%dT%H%M%SZ>-<6 hex>``, sortable and unique without a lock
- ``cluster``: ``history.cluster`` (config or profile), else Slurm's ``ClusterName``
  (``scontrol show config``), else the host name
- ``created_at`` (UTC, ISO 8601) and ``date`` (its UTC day, the history's partition)
- ``llmbench_version``, ``git_sha``: the workflow's source revision
- ``config_sha256``: sha256 of the validated config as canonical JSON, without the
  ``history`` block (where a sweep is stored does not change what it measured)
- ``python_env_sha256``: sha256 of this environment's sorted ``name==version`` list
- ``venv_freeze_sha256``: sha256 of the stage venv's frozen package list, when it exists
- ``images``: ``{sqsh file: sha256}`` of the stage folder's images, when there are any

``read_sweep`` checks every field (``check_record``) before anything is written from it:
``date`` names a folder of the history, so it must be a real day, the one of
``created_at`` and of the sweep id.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import secrets
from collections.abc import Mapping
from datetime import date, datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from llmbench import __version__
from llmbench.core.stage import IMAGES_DIR, VENV_DIR, VENV_MARKER
from llmbench.errors import ConfigError
from llmbench.files.regular_file import read_regular, why_unreadable
from llmbench.job import provenance
from llmbench.launch import slurm

SCHEMA_VERSION = 1
"""Version of the history's tables; raised when a column changes meaning or is renamed
(added columns need no new version: readers unify tables by column name)."""
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
SWEEP_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}$")
DATE_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
MAX_RECORD_BYTES = 1 << 20
"""A sweep record is a few hundred bytes, a few KiB with many images."""
MAX_TEXT_CHARS = 200
RECORD_FIELDS = (
    "schema_version", "sweep_id", "cluster", "created_at", "date", "llmbench_version",
    "git_sha", "config_sha256", "python_env_sha256", "venv_freeze_sha256", "images",
)  # fmt: skip
_CHUNK = 1 << 20


def new_sweep_id(now: datetime) -> str:
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def check_name(value: str, what: str) -> str:
    """A cluster name fit for a path segment and a partition value."""
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        raise ConfigError(
            f"{what}: {value!r} is not a usable name; allowed: letters, digits, '.', '_', '-' "
            "(at most 64, starting with a letter or digit)"
        )
    return value


def cluster_name(configured: str | None) -> str:
    """The configured name, else Slurm's ``ClusterName``, else this host's name."""
    if configured:
        return check_name(configured, "history.cluster")
    found = slurm.cluster_name() or platform.node().split(".")[0] or "localhost"
    # A host name may hold characters a partition value must not: keep the usable ones.
    return re.sub(r"[^A-Za-z0-9._-]", "-", found)[:64].lstrip("._-") or "localhost"


def config_sha256(config: Mapping[str, Any]) -> str:
    """sha256 of the validated config without its ``history`` block (canonical JSON)."""
    what = {k: v for k, v in config.items() if k != "history"}
    text = json.dumps(what, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def python_env_sha256() -> str:
    """sha256 of this environment's installed distributions as sorted ``name==version``."""
    names = sorted({f"{d.metadata['Name'].lower()}=={d.version}" for d in metadata.distributions()})
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def image_sha256(path: Path) -> str:
    """sha256 of an image file, cached beside it (``.<name>.sha256``) for as long as its
    size and modification time stay the same: images are many GB and rarely change."""
    stat = path.stat()
    stamp = f"{stat.st_size} {stat.st_mtime_ns}"
    cache = path.with_name(f".{path.name}.sha256")
    try:
        cached_stamp, digest = cache.read_text().split("\n")[:2]
        if cached_stamp == stamp and SHA256_RE.fullmatch(digest):
            return digest
    except (OSError, ValueError):
        pass
    digest = file_sha256(path)
    try:
        tmp = cache.with_name(f"{cache.name}.tmp{os.getpid()}")
        tmp.write_text(f"{stamp}\n{digest}\n")
        os.replace(tmp, cache)
    except OSError:  # a read-only stage folder: hash again next time
        pass
    return digest


def stage_hashes(stage: str | Path | None) -> tuple[str | None, dict[str, str]]:
    """(venv freeze sha256 or None, {image file: sha256}) of a stage folder."""
    if stage is None:
        return None, {}
    stage = Path(stage)
    marker = stage / VENV_DIR / VENV_MARKER
    venv = file_sha256(marker) if marker.is_file() else None
    images_dir = stage / IMAGES_DIR
    images = (
        {p.name: image_sha256(p) for p in sorted(images_dir.glob("*.sqsh")) if p.is_file()}
        if images_dir.is_dir()
        else {}
    )
    return venv, images


def stamp_sweep(
    config_hash: str,
    cluster: str | None = None,
    stage: str | Path | None = None,
    source_dir: str | Path | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """A new sweep record (see the module docstring)."""
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    venv, images = stage_hashes(stage)
    return {
        "schema_version": SCHEMA_VERSION,
        "sweep_id": new_sweep_id(now),
        "cluster": cluster_name(cluster),
        "created_at": now.isoformat(timespec="milliseconds"),
        "date": now.date().isoformat(),
        "llmbench_version": __version__,
        "git_sha": provenance.git_revision(source_dir) if source_dir is not None else None,
        "config_sha256": config_hash,
        "python_env_sha256": python_env_sha256(),
        "venv_freeze_sha256": venv,
        "images": images,
    }


def read_sweep(path: str | Path) -> dict[str, Any]:
    """A sweep record file, checked (``check_record``): one line naming the file and the
    bad field if not. Only a regular file of at most ``MAX_RECORD_BYTES`` is read."""
    path = Path(path)
    try:
        record = json.loads(read_regular(path, MAX_RECORD_BYTES))
    except FileNotFoundError:
        raise ConfigError(
            f"{path} does not exist; allowed: the results folder of a sweep whose tables "
            "this llmbench built (run snakemake again to stamp it)"
        ) from None
    except OSError as err:
        raise ConfigError(
            f"{path}: cannot read ({why_unreadable(err)}); allowed: a sweep record (JSON "
            "file) written by llmbench"
        ) from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not a sweep record ({str(exc).splitlines()[0]})") from None
    return check_record(record, str(path))


def _field_error(where: str, name: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{where}: {name}: {value!r} is not allowed; allowed: {allowed}")


def _check_sha256(where: str, name: str, value: Any, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not isinstance(value, str) or not SHA256_RE.fullmatch(value):
        allowed = "64 lowercase hex digits" + (" or null" if optional else "")
        raise _field_error(where, name, value, allowed)


def _check_text(where: str, name: str, value: Any, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, str) and 0 < len(value) <= MAX_TEXT_CHARS and value.isprintable():
        return
    allowed = f"printable text of 1 to {MAX_TEXT_CHARS} characters"
    raise _field_error(where, name, value, allowed + (" or null" if optional else ""))


def _utc_day(where: str, record: Mapping[str, Any]) -> str:
    """``date`` checked as a day (YYYY-MM-DD) that is ``created_at``'s UTC day and the
    day the sweep id starts with: it names a folder of the history."""
    created, day = record["created_at"], record["date"]
    try:
        when = datetime.fromisoformat(created) if isinstance(created, str) else None
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise _field_error(where, "created_at", created, "an ISO 8601 time with its UTC offset")
    try:
        valid = isinstance(day, str) and bool(DATE_RE.fullmatch(day)) and date.fromisoformat(day)
    except ValueError:
        valid = False
    if not valid:
        raise _field_error(where, "date", day, "a day as YYYY-MM-DD")
    expected = when.astimezone(timezone.utc).date().isoformat()
    if day != expected or record["sweep_id"][:8] != day.replace("-", ""):
        raise _field_error(
            where, "date", day, f"the UTC day of created_at and of the sweep id ({expected})"
        )
    return day


def check_record(record: Any, where: str) -> dict[str, Any]:
    """A sweep record (module docstring) with every field of the right type and form;
    ``ConfigError`` naming ``where`` and the first bad field. Fields a newer llmbench
    added are kept as they are."""
    missing = [k for k in RECORD_FIELDS if k not in record] if isinstance(record, dict) else []
    if not isinstance(record, dict) or missing:
        raise ConfigError(f"{where}: not a sweep record; missing fields: {', '.join(missing)}")
    version = record["schema_version"]
    if type(version) is not int or not 1 <= version <= SCHEMA_VERSION:
        raise _field_error(
            where, "schema_version", version, f"a whole number from 1 to {SCHEMA_VERSION}"
        )
    if not isinstance(record["sweep_id"], str) or not SWEEP_ID_RE.fullmatch(record["sweep_id"]):
        raise ConfigError(f"{where}: sweep_id {record['sweep_id']!r} is not a sweep id")
    check_name(record["cluster"], f"{where}: cluster")
    _utc_day(where, record)
    _check_text(where, "llmbench_version", record["llmbench_version"])
    _check_text(where, "git_sha", record["git_sha"], optional=True)
    for name in ("config_sha256", "python_env_sha256"):
        _check_sha256(where, name, record[name])
    _check_sha256(where, "venv_freeze_sha256", record["venv_freeze_sha256"], optional=True)
    images = record["images"]
    if not isinstance(images, dict):
        raise _field_error(where, "images", images, "a mapping of image file to sha256")
    for name, digest in images.items():
        _check_text(where, "images key", name)
        _check_sha256(where, f"images[{name!r}]", digest)
    return record
