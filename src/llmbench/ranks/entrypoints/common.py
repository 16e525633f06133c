"""What every entry point shares: its arguments and the spec file."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.metadata
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.core.runspec import RunSpec, meets_requirement
from llmbench.errors import LaunchError

CPU_ONLY_FUSIONS_OFF = ("apply_rope_fusion",)
"""Model-config switches that need Transformer Engine kernels; the CPU checks of the
entry points turn them off on a machine without TE (a GPU image has TE and keeps them)."""

VERSION_SOURCES = {"megatron_core": ("megatron-core", "megatron.core.package_info")}
"""A framework named in parity.yaml ``requires`` -> (its distribution, a module with
``__version__`` for an install without package metadata)."""


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


def _parser(prog: str, can_check: bool) -> argparse.ArgumentParser:
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
    return parser


def _options(spec: RunSpec, args: argparse.Namespace) -> EntryOptions:
    return EntryOptions(
        spec=spec,
        profile_steps=tuple(args.profile_steps) if args.profile_steps else None,
        save_checkpoint=args.save_checkpoint,
        load_checkpoint=args.load_checkpoint,
        check_only=getattr(args, "check_only", None),
    )


def parse_args(argv: Sequence[str] | None, prog: str, can_check: bool = False) -> EntryOptions:
    args = _parser(prog, can_check).parse_args(argv)
    # in the rank's environment: what the image's versions decide is decided here
    return _options(decide_requirements(read_spec(args.spec)), args)


def launch_options(spec: RunSpec, variant_args: Sequence[str]) -> EntryOptions:
    """The options launch.sh's ``variant_args`` give the entry point, for ``spec`` as the
    host resolved it (``llmbench render``; settings the container decides stay pending)."""
    return _options(spec, _parser("llmbench", False).parse_args(["--spec", "-", *variant_args]))


def read_spec(path: str | Path) -> RunSpec:
    try:
        return RunSpec.from_dict(json.loads(Path(path).read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LaunchError(f"{path}: cannot read the run spec: {exc}") from None


def set_path(root: Any, dotted: str, value: Any) -> None:
    """``set_path(cfg, "a.b.c", v)`` sets ``cfg.a.b.c = v`` (config objects, namespaces).
    On a dataclass the leaf must be one of its fields: ``setattr`` would otherwise add an
    attribute the framework never reads, and the override would silently do nothing."""
    *parents, leaf = dotted.split(".")
    node = root
    for depth, name in enumerate(parents):
        node = getattr(node, name, None)
        if node is None:
            where = ".".join(parents[: depth + 1])
            raise LaunchError(f"override {dotted}: {where} is not set in this framework's config")
    if dataclasses.is_dataclass(node) and leaf not in {f.name for f in dataclasses.fields(node)}:
        raise LaunchError(
            f"override {dotted}: {type(node).__name__} has no field {leaf!r} in this "
            "framework version"
        )
    setattr(node, leaf, value)


def apply_overrides(root: Any, overrides: Mapping[str, Any]) -> None:
    for dotted, value in overrides.items():
        set_path(root, dotted, value)


def installed_versions(names: Iterable[str]) -> dict[str, str]:
    """The versions of the frameworks ``names`` in this environment (``VERSION_SOURCES``);
    a framework that is not installed is left out."""
    out = {}
    for name in names:
        distribution, module = VERSION_SOURCES[name]
        try:
            out[name] = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            try:
                out[name] = str(importlib.import_module(module).__version__)
            except (ImportError, AttributeError):
                continue
    return out


def pending_settings(spec: RunSpec) -> list[dict[str, Any]]:
    """The spec's settings that wait for the container's framework versions."""
    return [s.to_dict() for s in spec.parity.pending]


def decide_requirements(spec: RunSpec, versions: Mapping[str, str] | None = None) -> RunSpec:
    """The spec with its undecided settings (``requires``: the run's image was of unknown
    versions) decided against ``versions`` (default: this environment's): kept, without
    the mark, where the versions meet it, dropped otherwise."""
    pending = spec.parity.pending
    if not pending:
        return spec
    names = {name for s in pending for name in s.requires or {}}
    have = dict(versions) if versions is not None else installed_versions(names)
    missing = sorted(names - set(have))
    if missing:
        raise LaunchError(
            f"{', '.join(missing)}: version unknown in this environment; needed to decide "
            f"{', '.join(s.name for s in pending)}"
        )
    decided = tuple(
        dataclasses.replace(setting, requires=None)
        for setting in spec.parity.settings
        if all(meets_requirement(have[n], want) for n, want in (setting.requires or {}).items())
    )
    return dataclasses.replace(spec, parity=dataclasses.replace(spec.parity, settings=decided))


def pick(table: Mapping[tuple[str, str], str], spec: RunSpec, what: str) -> str:
    key = (spec.workload, spec.size)
    if key not in table:
        allowed = ", ".join(f"{w} {s}" for w, s in table)
        raise LaunchError(f"{what}: no recipe for {spec.workload} {spec.size}; allowed: {allowed}")
    return table[key]
