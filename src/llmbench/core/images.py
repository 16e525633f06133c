"""Container image references: their parts and the squashfs file each becomes.

Pure: which image a run uses is decided by the config (``images:`` over the catalog's
reference); ``llmbench.setup.containers`` runs the import.
"""

from __future__ import annotations

import re

from llmbench.errors import LaunchError

ARCHES = ("x86_64", "aarch64")

_REPO = r"[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
# matched whole (fullmatch): a `$` would also match before a final newline
REPO_TAG_RE = re.compile(rf"(?P<repo>{_REPO}):(?P<tag>{_TAG})")
HOST_RE = re.compile(r"[A-Za-z0-9.-]+(?::[0-9]+)?")


def parse_image(image: str) -> tuple[str | None, str, str]:
    """(registry host or None, repository, tag) of ``[host/]namespace/name:tag``.

    As docker does, a first component with a dot or a port (or ``localhost``) is a
    registry host; enroot's own ``host#namespace/name:tag`` form is accepted too.
    """
    host: str | None = None
    rest = image
    if "#" in image:
        host, rest = image.split("#", 1)
    elif "/" in image:
        first, tail = image.split("/", 1)
        if "." in first or ":" in first or first == "localhost":
            host, rest = first, tail
    match = REPO_TAG_RE.fullmatch(rest)
    if not match or (host is not None and not HOST_RE.fullmatch(host)):
        raise LaunchError(
            f"image {image!r} is not a container image reference; allowed: "
            "[registry/]namespace/name:tag with a lowercase name and an explicit tag"
        )
    return host, match.group("repo"), match.group("tag")


def sqsh_name(image: str, arch: str = "x86_64") -> str:
    """File name of an image's squashfs: ``nvidia/jax:maxtext`` -> ``nvidia+jax+maxtext.sqsh``.

    An aarch64 import of the same reference is another file (``...+maxtext.aarch64.sqsh``):
    one sweep may run the same image on x86_64 and Grace nodes.
    """
    if arch not in ARCHES:
        raise LaunchError(f"arch={arch!r} for image {image!r}; allowed: {', '.join(ARCHES)}")
    _, repo, tag = parse_image(image)
    stem = f"{repo}:{tag}".replace("/", "+").replace(":", "+")
    return f"{stem}.sqsh" if arch == "x86_64" else f"{stem}.{arch}.sqsh"
