"""The checked config and its run specs, kept for Snakemake's in-job processes.

Snakemake reads the Snakefile again inside every job (twice per job under the Slurm
executor plugin), and each read would validate and expand the whole sweep's config
again. The main process, which always checks the config in full, writes the result
here; a process inside a job reads it back instead when its key matches.

The key is the sha256 of everything the check reads: the experiment file's bytes,
Snakemake's ``--config``/``--configfile`` values, the folders setup files are looked up
in, the environment variables the check consults, llmbench itself (its version and the
size and modification time of every file of the package, so an edited checkout counts
as another version) and, only when the check counted them (``cores_checked``: a sweep
with local CPU ranks), this machine's cores: a job on a node with other cores then checks
again. A file that is missing, unreadable, written
for another key or not what this module writes is no cache: the caller checks again.

File: one line with the key, then one line of JSON ``{"config": ..., "specs": [...]}``
(``RunSpec.to_dict``), written atomically.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from llmbench import __version__
from llmbench.core.runspec import RunSpec
from llmbench.files.atomic import write_text_atomic

PACKAGE_DIR = Path(__file__).resolve().parents[1]
ENVIRONMENT_KEYS = ("LOAD_CHECKPOINT_PATH", "HF_HOME")
"""Environment variables the config check reads (llmbench.core.config, spec.site_fit)."""

Checked = tuple[dict[str, Any], list[RunSpec]]


@functools.cache
def package_fingerprint(root: Path = PACKAGE_DIR) -> str:
    """sha256 of llmbench's version and the path, size and modification time of every
    file of the package: changes with a release and with any edit of a checkout."""
    digest = hashlib.sha256(__version__.encode())
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda e: e.name)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    stack.append(Path(entry.path))
                continue
            info = entry.stat()
            digest.update(f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def cache_key(
    experiment: str | Path,
    overrides: Mapping[str, Any],
    base_dirs: Sequence[str | Path],
    cores: int | None = None,
) -> str:
    """The key of the check of config file ``experiment`` with Snakemake's ``overrides``
    and setup files looked up in ``base_dirs``; ``cores`` when the check counted them."""
    try:
        content = hashlib.sha256(Path(experiment).read_bytes()).hexdigest()
    except OSError as err:  # absent or unreadable: the check itself says so
        content = f"unreadable: {type(err).__name__}"
    what = {
        "experiment": [str(experiment), content],
        "overrides": overrides,
        "base_dirs": [str(Path(d).resolve()) for d in base_dirs],
        "environment": {name: os.environ.get(name) for name in ENVIRONMENT_KEYS},
        "cores": cores,
        "llmbench": package_fingerprint(),
    }
    text = json.dumps(what, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _stored_key(path: str | Path) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.readline().rstrip("\n")
    except (OSError, ValueError):
        return None


def read_specs(
    path: str | Path,
    experiment: str | Path,
    overrides: Mapping[str, Any],
    base_dirs: Sequence[str | Path],
) -> Checked | None:
    """(config, specs) the main process stored in ``path`` for this check; None when
    there is no such cache (missing, another key, unreadable or malformed)."""
    try:
        with open(path, encoding="utf-8") as fh:  # one open: the key and the data agree
            stored = fh.readline().rstrip("\n")
            keys = {
                cache_key(experiment, overrides, base_dirs, cores)
                for cores in (None, os.cpu_count())
            }
            if stored not in keys:
                return None
            data = json.loads(fh.read())
        return dict(data["config"]), [RunSpec.from_dict(s) for s in data["specs"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write_specs(
    path: str | Path,
    experiment: str | Path,
    overrides: Mapping[str, Any],
    base_dirs: Sequence[str | Path],
    checked: Checked,
    cores_checked: bool,
) -> bool:
    """Store ``checked`` (config, specs) for this check in ``path`` unless it holds them
    already. Nothing is written (False) when JSON would not give back the same values (a
    YAML date, say): the processes inside jobs then check the config themselves."""
    cores = os.cpu_count() if cores_checked else None
    key = cache_key(experiment, overrides, base_dirs, cores)
    if _stored_key(path) == key:
        return True
    config, specs = checked
    payload = {"config": dict(config), "specs": [spec.to_dict() for spec in specs]}
    try:
        text = json.dumps(payload, separators=(",", ":"))
    except (TypeError, ValueError):
        return False
    # What the jobs read back is RunSpec.from_dict of what JSON gives back, so the cache
    # holds when JSON gives back these dictionaries (to_dict and from_dict are inverse:
    # tests/workflow/test_spec_cache.py). Compared as dictionaries: building every spec again
    # here took a third of a 10,000-run sweep's parse.
    if json.loads(text) != payload:
        return False
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(f"{key}\n{text}\n", path)
    except OSError:  # a read-only working folder: the jobs check the config themselves
        return False
    return True
