"""A run's reference launch settings (``RunSpec.parity``), resolved once into a frozen
typed value: its settings by kind (``.sbatch``, ``.srun``, ``.env`` ...), the image it
runs in against the reference's (``.stack``) and the deliberate differences.

Standard library only: the ranks read it back from ``run_spec.json`` inside a container.
``to_dict`` writes the same JSON as ever; ``from_dict`` also reads the files of earlier
versions (without ``stack``, ``unverified`` or ``differences``, a citation as one string).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

KINDS = ("sbatch", "srun", "prefix", "node", "env", "recipe", "tokenizer", "logging", "limit")
"""Where a setting goes: sbatch options, srun options, the command's prefix, once per
node, the ranks' environment, the recipe's overrides, the tokenizer, logging, limits."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _frozen(data: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(data)) if data else _EMPTY


@dataclass(frozen=True)
class Setting:
    """One reference setting: its kind (``KINDS``), name, value and citations.
    ``requires``: framework versions the container decides it by (the image's versions
    were unknown; ``llmbench.ranks.entrypoints.common.decide_requirements``);
    ``unverified``: why its value could not be checked; ``addition``: the reference's
    value and llmbench's reason where the value is llmbench's own."""

    kind: str
    name: str
    value: Any
    source: tuple[str, ...] = ()
    requires: Mapping[str, str] | None = None
    unverified: str | None = None
    addition: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "name": self.name, "value": self.value}
        out["source"] = list(self.source)
        if self.requires is not None:
            out["requires"] = dict(self.requires)
        if self.unverified is not None:
            out["unverified"] = self.unverified
        if self.addition is not None:
            out["addition"] = dict(self.addition)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Setting:
        source = data.get("source") or ()
        requires, addition = data.get("requires"), data.get("addition")
        return cls(
            kind=str(data["kind"]),
            name=str(data["name"]),
            value=data["value"],
            source=(source,) if isinstance(source, str) else tuple(source),
            requires=None if requires is None else _frozen(requires),
            unverified=data.get("unverified"),
            addition=None if addition is None else _frozen(addition),
        )


@dataclass(frozen=True)
class Stack:
    """Which software the ranks run: the image (empty where they run in a Python
    environment), the reference's image, whether the two are the same, and the image's
    framework versions (empty when unknown)."""

    image: str = ""
    reference_image: str = ""
    reference_stack: bool = False
    versions: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    def to_dict(self) -> dict[str, Any]:
        return {
            "image": self.image,
            "reference_image": self.reference_image,
            "reference_stack": self.reference_stack,
            "versions": dict(self.versions),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Stack:
        return cls(
            image=str(data.get("image") or ""),
            reference_image=str(data.get("reference_image") or ""),
            reference_stack=bool(data.get("reference_stack")),
            versions=_frozen(data.get("versions")),
        )


@dataclass(frozen=True)
class ParitySettings:
    """The reference's settings of one run (``catalog/parity.yaml`` resolved by
    ``llmbench.core.catalog.parity.resolve_parity``); empty (``has_reference`` False) for
    a workload the catalog has no reference for, such as the embedded one.

    Each kind's ``{name: value}`` is resolved once, in the data's order, leaving out a
    setting still marked ``requires``: it waits for the container's framework versions."""

    family: str = ""
    document: str = ""
    reference: str = ""
    stack: Stack | None = None
    settings: tuple[Setting, ...] = ()
    unverified: tuple[str, ...] = ()
    differences: tuple[Mapping[str, Any], ...] = ()
    sbatch: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    srun: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    prefix: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    node: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    env: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    recipe: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    tokenizer: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    logging: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    limit: Mapping[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_kind: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
        for setting in self.settings:
            if setting.requires is None and setting.kind in by_kind:
                by_kind[setting.kind][setting.name] = setting.value
        for kind, values in by_kind.items():
            object.__setattr__(self, kind, _frozen(values))

    @property
    def has_reference(self) -> bool:
        """The catalog has the reference's launch of this run (a spec document)."""
        return bool(self.document)

    @property
    def pending(self) -> tuple[Setting, ...]:
        """The settings that wait for the container's framework versions."""
        return tuple(s for s in self.settings if s.requires is not None)

    def to_dict(self) -> dict[str, Any]:
        """``run_spec.json``'s ``parity``: ``{}`` without a reference."""
        if not self.has_reference:
            return {}
        return {
            "family": self.family,
            "document": self.document,
            "reference": self.reference,
            "stack": (self.stack or Stack()).to_dict(),
            "settings": [s.to_dict() for s in self.settings],
            "unverified": list(self.unverified),
            "differences": [dict(d) for d in self.differences],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ParitySettings:
        if not data:
            return cls()
        stack = data.get("stack")
        return cls(
            family=str(data.get("family") or ""),
            document=str(data.get("document") or ""),
            reference=str(data.get("reference") or ""),
            stack=Stack.from_dict(stack) if stack else None,
            settings=tuple(Setting.from_dict(s) for s in data.get("settings") or ()),
            unverified=tuple(data.get("unverified") or ()),
            differences=tuple(_frozen(d) for d in data.get("differences") or ()),
        )


NO_PARITY = ParitySettings()
"""The settings of a run without a reference (the embedded workload)."""
