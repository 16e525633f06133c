"""What every entry point shares: its arguments and the spec file."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.errors import LaunchError
from llmbench.spec.runspec import RunSpec


@dataclass(frozen=True)
class EntryOptions:
    """The launch script's variant settings for the entry point."""

    spec: RunSpec
    profile_steps: tuple[int, int] | None = None
    save_checkpoint: str | None = None
    load_checkpoint: str | None = None
    check_only: str | None = None

    @property
    def max_steps(self) -> int:
        """Training steps; a profiled run lasts at least until the profiler stops."""
        stop = self.profile_steps[1] if self.profile_steps else 0
        return max(self.spec.steps, stop)


def parse_args(argv: Sequence[str] | None, prog: str, can_check: bool = False) -> EntryOptions:
    parser = argparse.ArgumentParser(prog=prog, description="llmbench entry point (one rank)")
    parser.add_argument("--spec", required=True, help="run_spec.json of the attempt")
    parser.add_argument("--profile-steps", nargs=2, type=int, metavar=("START", "STOP"))
    parser.add_argument("--save-checkpoint", metavar="DIR")
    parser.add_argument("--load-checkpoint", metavar="DIR")
    if can_check:
        parser.add_argument(
            "--check-only",
            metavar="OUT",
            help="build and validate the framework config as far as a CPU allows, write "
            "it to OUT and exit without training",
        )
    args = parser.parse_args(argv)
    return EntryOptions(
        spec=read_spec(args.spec),
        profile_steps=tuple(args.profile_steps) if args.profile_steps else None,
        save_checkpoint=args.save_checkpoint,
        load_checkpoint=args.load_checkpoint,
        check_only=getattr(args, "check_only", None),
    )


def read_spec(path: str | Path) -> RunSpec:
    try:
        return RunSpec.from_dict(json.loads(Path(path).read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LaunchError(f"{path}: cannot read the run spec: {exc}") from None


def set_path(root: Any, dotted: str, value: Any) -> None:
    """``set_path(cfg, "a.b.c", v)`` sets ``cfg.a.b.c = v`` (config objects, namespaces)."""
    *parents, leaf = dotted.split(".")
    node = root
    for name in parents:
        node = getattr(node, name)
    setattr(node, leaf, value)


def apply_overrides(root: Any, overrides: Mapping[str, Any]) -> None:
    for dotted, value in overrides.items():
        set_path(root, dotted, value)


def pick(table: Mapping[tuple[str, str], str], spec: RunSpec, what: str) -> str:
    key = (spec.workload, spec.size)
    if key not in table:
        allowed = ", ".join(f"{w} {s}" for w, s in table)
        raise LaunchError(f"{what}: no recipe for {spec.workload} {spec.size}; allowed: {allowed}")
    return table[key]
