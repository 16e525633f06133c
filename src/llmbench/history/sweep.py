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
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import secrets
from collections.abc import Mapping
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from llmbench import __version__, provenance, slurm
from llmbench.errors import ConfigError
from llmbench.stage import IMAGES_DIR, VENV_DIR, VENV_MARKER

SCHEMA_VERSION = 1
"""Version of the history's tables; raised when a column changes meaning or is renamed
(added columns need no new version: readers unify tables by column name)."""
SWEEP_FILE = "sweep.json"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
SWEEP_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}$")
RECORD_FIELDS = (
    "schema_version", "sweep_id", "cluster", "created_at", "date", "llmbench_version",
    "git_sha", "config_sha256", "python_env_sha256", "venv_freeze_sha256", "images",
)  # fmt: skip
_CHUNK = 1 << 20


def new_sweep_id(now: datetime) -> str:
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def check_name(value: str, what: str) -> str:
    """A cluster name fit for a path segment and a partition value."""
    if not isinstance(value, str) or not NAME_RE.match(value):
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
        if cached_stamp == stamp and re.fullmatch(r"[0-9a-f]{64}", digest):
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
    """A sweep record file, checked: one line naming the file and the bad field if not."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"{path} does not exist; allowed: the results folder of a sweep whose tables "
            "this llmbench built (run snakemake again to stamp it)"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a sweep record ({str(exc).splitlines()[0]})") from None
    missing = [k for k in RECORD_FIELDS if k not in record] if isinstance(record, dict) else []
    if not isinstance(record, dict) or missing:
        raise ConfigError(f"{path}: not a sweep record; missing fields: {', '.join(missing)}")
    if not SWEEP_ID_RE.match(str(record["sweep_id"])):
        raise ConfigError(f"{path}: sweep_id {record['sweep_id']!r} is not a sweep id")
    check_name(record["cluster"], f"{path}: cluster")
    return record
