"""Container images as enroot squashfs files (``.sqsh``) in the stage folder.

Registry credentials stay in enroot's own credentials file
(``$ENROOT_CONFIG_PATH/.credentials``): nothing here passes, reads or logs them.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

from llmbench.core.images import ARCHES, parse_image
from llmbench.errors import LaunchError


def import_command(
    image: str, out_path: str | Path, arch: str, registry: str | None = None
) -> list[str]:
    """``enroot import`` of ``image`` into ``out_path``.

    ``registry`` is used when the reference names none (enroot's default otherwise);
    ``-a aarch64`` for Grace-based nodes, nothing for x86_64.
    """
    if arch not in ARCHES:
        raise LaunchError(f"arch={arch!r} for image {image!r}; allowed: {', '.join(ARCHES)}")
    host, repo, tag = parse_image(image)
    host = host or registry
    uri = f"docker://{host}#{repo}:{tag}" if host else f"docker://{repo}:{tag}"
    command = ["enroot", "import"]
    if arch == "aarch64":
        command += ["-a", "aarch64"]
    return [*command, "-o", str(out_path), uri]


def import_image(image: str, out_path: str | Path, arch: str, registry: str | None = None) -> Path:
    """Import ``image`` to ``out_path`` via a temporary name in the same folder.

    The rename happens only after enroot succeeded, so an interrupted import never
    leaves a file that looks finished; a failed one leaves nothing.
    """
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    # enroot refuses an existing output file: a fresh name, not a created temp file.
    tmp = out.parent / f".{out.name}.{secrets.token_hex(4)}.partial"
    command = import_command(image, tmp, arch, registry)
    try:
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
            raise LaunchError(f"enroot import of {image!r} failed ({proc.returncode}): {tail}")
        if not tmp.is_file():
            raise LaunchError(f"enroot import of {image!r} wrote no file at {tmp}")
        os.replace(tmp, out)
    except FileNotFoundError:
        raise LaunchError("enroot not found on PATH; install enroot on the login node") from None
    finally:
        tmp.unlink(missing_ok=True)
    return out
