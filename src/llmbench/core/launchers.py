"""The launchers a config may name, and what each one is: one record per launcher, read
by every place that needs to know where a run's ranks are and who is asked about them.

What a launcher does (render its ``launch.sh``, write its files, read its outcome) is
``llmbench.launch.launchers``; this table is the part the config check, the preflight
settings and the tables need without importing the launch code.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmbench.errors import ConfigError


@dataclass(frozen=True)
class LauncherTraits:
    """What one launcher is.

    ``cluster_type``: the runs table's column. ``on_this_machine``: every rank runs on the
    train job's own machine (its cores are counted against the ranks x threads asked).
    ``platform``: the ranks run in a platform's pods; the train job only submits and
    waits (one core, no overlap with other runs). ``site_block``: the profile block of its
    site values (``kubernetes:``, ``runai:``). ``poll_s``: default seconds between status
    polls of the platform's API (0: none). ``slurm_job``: the ranks are steps of a Slurm
    job, whose partition's nodes are the preflight's default. ``frameworks``,
    ``variants``, ``containers``: what it can start (empty: anything).
    """

    name: str
    cluster_type: str
    on_this_machine: bool = False
    platform: bool = False
    site_block: str | None = None
    poll_s: float = 0.0
    slurm_job: bool = False
    frameworks: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    containers: tuple[str, ...] = ()


LAUNCHER_TRAITS: dict[str, LauncherTraits] = {
    traits.name: traits
    for traits in (
        # torchrun in llmbench's own Python: the embedded trainer, and Megatron-Core's
        # GPTModel where the wheel is installed (the GPU proof kit).
        LauncherTraits(
            "local",
            cluster_type="local",
            on_this_machine=True,
            frameworks=("torch", "megatron-core"),
            variants=("perf",),
            containers=("none",),
        ),
        LauncherTraits("srun", cluster_type="slurm", slurm_job=True),
        LauncherTraits(
            "kubernetes",
            cluster_type="kubernetes",
            platform=True,
            site_block="kubernetes",
            poll_s=10.0,
        ),
        LauncherTraits(
            "runai", cluster_type="runai", platform=True, site_block="runai", poll_s=30.0
        ),
    )
}
"""Every launcher, in the order the schema lists them."""

PLATFORM_SITE_BLOCKS = tuple(t.site_block for t in LAUNCHER_TRAITS.values() if t.site_block)
"""The profile blocks of the platform launchers' site values."""


def launcher_traits(name: str) -> LauncherTraits:
    """The record of launcher ``name``; one line naming the allowed ones otherwise."""
    try:
        return LAUNCHER_TRAITS[name]
    except KeyError:
        allowed = ", ".join(LAUNCHER_TRAITS)
        raise ConfigError(f"launcher: {name!r} is not allowed; allowed: {allowed}") from None


def is_platform(name: str) -> bool:
    """The ranks of launcher ``name`` run in a platform's pods (False for an unknown name:
    counted as running here, so nothing is hidden)."""
    traits = LAUNCHER_TRAITS.get(name)
    return traits is not None and traits.platform


def cluster_type(name: str | None) -> str:
    """The runs table's ``cluster_type`` of launcher ``name``, for records that predate the
    field (written when only ``local`` and ``srun`` existed)."""
    traits = LAUNCHER_TRAITS.get(name or "")
    return traits.cluster_type if traits else "local"
