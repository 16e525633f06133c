"""What a config that reaches across reference releases will get, said before it runs:
one line per model run in two releases, and per later release asked a variant it does
not itself run. These are not errors (each run is valid on its own) but a person reading
only the run ids would not know them. ``llmbench plan`` and the workflow print them."""

from __future__ import annotations

from collections.abc import Sequence

from llmbench.core.runspec import DEFAULT_RELEASE, RunSpec
from llmbench.text import counted

CHECKPOINT_VARIANTS = ("ckpt-save", "ckpt-load")


def mixed_releases(specs: Sequence[RunSpec]) -> list[str]:
    """A line per (workload, size) whose runs come from more than one release."""
    releases: dict[tuple[str, str], set[str]] = {}
    for spec in specs:
        releases.setdefault((spec.workload, spec.size), set()).add(spec.release)
    return [
        f"{workload} {size} runs in releases {' and '.join(sorted(found))}: each run takes "
        "its own release's recipe row (GBS, parallelism, precision), image and published "
        "numbers, and their run ids differ (a later release's end in -<release>): two "
        "configurations side by side, not one measured twice"
        for (workload, size), found in releases.items()
        if len(found) > 1
    ]


def later_release_variants(specs: Sequence[RunSpec]) -> list[str]:
    """A line per (release, variant kind) a later release's runs ask for that the
    release's suite does not run: profiling, checkpoints."""
    runs: dict[tuple[str, str], list[RunSpec]] = {}
    for spec in specs:
        if spec.release == DEFAULT_RELEASE:
            continue
        kind = "ckpt" if spec.variant in CHECKPOINT_VARIANTS else spec.variant
        if kind in ("profile", "ckpt"):
            runs.setdefault((spec.release, kind), []).append(spec)
    lines = []
    for (release, kind), found in runs.items():
        count = counted(len(found), "run")
        if kind == "profile":
            settings = found[0].profile
            steps = settings.get("steps") or ["?", "?"]
            lines.append(
                f"{count} of release {release} with variant profile: the release's suite "
                "runs without a profiler (profile: false); profiled here at Nsight steps "
                f"{steps[0]}-{steps[1]} on ranks {settings.get('ranks', 'all')}, as the "
                "release's launch.sh can, with no verdict against a published number"
            )
        else:
            lines.append(
                f"{count} of release {release} with variant ckpt-save/ckpt-load: the release "
                "publishes no checkpoint runs; saved or restored here through the recipe's "
                "checkpoint options in the stage folder (checkpoints/<run>), with no "
                "published size (no free-space estimate) and no verdict"
            )
    return lines


def release_notes(specs: Sequence[RunSpec]) -> list[str]:
    """Every note of the sweep ``specs``, in the order above."""
    return [*mixed_releases(specs), *later_release_variants(specs)]
