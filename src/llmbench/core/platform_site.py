"""A platform launcher's site values (``kubernetes:`` or ``runai:`` in the config, from the
profile's site file) as a typed value: ``RunSpec.site``, parsed once from the block the
run records (``RunSpec.platform``). The launch modules consume it; standard library only.

A bad value raises a ``LaunchError`` naming the key and what is allowed (the config check
asks every run's launcher files before anything is submitted:
``llmbench.launch.launchers.check_platforms``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from llmbench.core.launchers import LAUNCHER_TRAITS
from llmbench.errors import LaunchError

APIS = {
    "trainjob": ("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob"),
    "pytorchjob": ("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"),
}
"""``kubernetes.api`` -> (group, version, plural, kind)."""
DEFAULT_SECRET_ENV = "RUNAI_APP_SECRET"
"""The environment variable that holds the Run:ai Application secret, unless
``runai.secret_env`` names another."""


@dataclass(frozen=True)
class Pvc:
    name: str
    claim: str
    path: str


def parse_pvcs(entries: list[str], key: str) -> tuple[Pvc, ...]:
    """``name:/mount/path:claimName`` entries (the spec's RUN_CONF_MOUNTS form)."""
    pvcs = []
    for entry in entries:
        parts = str(entry).split(":")
        if len(parts) != 3 or not all(parts) or not parts[1].startswith("/"):
            raise LaunchError(f"{key}.pvcs: {entry!r}; allowed: name:/mount/path:claimName")
        pvcs.append(Pvc(name=parts[0], path=parts[1], claim=parts[2]))
    return tuple(pvcs)


def _known_keys(block: str, values: Mapping[str, Any], known: Any) -> None:
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise LaunchError(f"{block}.{unknown[0]}: unknown key; allowed: {sorted(known)}")


@dataclass(frozen=True)
class KubernetesSite:
    """The profile's site values (``kubernetes:`` in the config, see docs/kubernetes.md)."""

    namespace: str = "default"
    api: str = "trainjob"
    runtime: str = "torch-distributed"
    image: str = ""
    queue: str = ""
    shm_gi: int = 64
    pvcs: tuple[Pvc, ...] = ()
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, Any], ...] = ()
    gpu_resource: str = "nvidia.com/gpu"
    llmbench_src: str = ""
    keep: bool = False
    poll_s: float = LAUNCHER_TRAITS["kubernetes"].poll_s
    context: str = ""
    hf_home: str = ""  # the site's hf_home (``core.config``), on one of ``pvcs``

    block = "kubernetes"

    @classmethod
    def from_config(cls, data: Mapping[str, Any]) -> KubernetesSite:
        values = dict(data)
        api = values.get("api", cls.api)
        if api not in APIS:
            raise LaunchError(f"kubernetes.api={api!r}: allowed: {', '.join(APIS)}")
        pvcs = parse_pvcs(values.pop("pvcs", []) or [], cls.block)
        values["tolerations"] = tuple(values.get("tolerations") or ())
        values["node_selector"] = dict(values.get("node_selector") or {})
        _known_keys(cls.block, values, cls.__dataclass_fields__)
        return cls(pvcs=pvcs, **values)


@dataclass(frozen=True)
class RunaiSite:
    """The profile's site values (``runai:`` in the config, see docs/runai.md)."""

    base_url: str = ""
    app_id: str = ""
    secret_env: str = DEFAULT_SECRET_ENV
    project: str = ""
    image: str = ""
    pvcs: tuple[Pvc, ...] = ()
    llmbench_src: str = ""
    keep: bool = False
    poll_s: float = LAUNCHER_TRAITS["runai"].poll_s
    context: str = ""
    hf_home: str = ""  # the site's hf_home (``core.config``), on one of ``pvcs``

    block = "runai"

    @classmethod
    def from_config(cls, data: Mapping[str, Any]) -> RunaiSite:
        values = dict(data)
        values["pvcs"] = parse_pvcs(values.pop("pvcs", []) or [], cls.block)
        _known_keys(cls.block, values, cls.__dataclass_fields__)
        site = cls(**values)
        for key in ("base_url", "app_id", "project"):
            if not getattr(site, key):
                raise LaunchError(
                    f"runai.{key} is not set; allowed: a value in the site file's runai: "
                    "block (profiles/runai/site.yaml shows each)"
                )
        if not site.base_url.startswith(("https://", "http://")):
            raise LaunchError(f"runai.base_url={site.base_url!r}; allowed: https://<host>/api/v1")
        return site


Site = KubernetesSite | RunaiSite
SITE_TYPES: dict[str, type[KubernetesSite] | type[RunaiSite]] = {
    kind.block: kind for kind in (KubernetesSite, RunaiSite)
}
"""Each site block's type, by the block's name (a launcher's ``site_block``)."""


def parse_site(launcher: str, block: Mapping[str, Any]) -> Site | None:
    """The site values of a run on ``launcher`` (its ``site_block``); None for a launcher
    without one (local, srun) or one this version does not know."""
    traits = LAUNCHER_TRAITS.get(launcher)
    if traits is None or traits.site_block is None:
        return None
    return SITE_TYPES[traits.site_block].from_config(block)
