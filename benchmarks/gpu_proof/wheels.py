"""The kit's wheel list (``benchmarks/gpu_proof/wheels.txt``): exact pins only, equal to
``envs/requirements.txt`` wherever both name a package, and, once downloaded, one wheel per
pin with that version (``benchmarks/gpu_proof/wheels.sh`` fetches them)."""

from __future__ import annotations

from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version


def requirement_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, requirement) of a requirements file, without comments, blank lines
    and options such as ``-r other.txt``."""
    lines = []
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        text = raw.split("#", 1)[0].strip()
        if text and not text.startswith("-"):
            lines.append((number, text))
    return lines


def read_pins(path: Path) -> tuple[dict[str, str], list[str]]:
    """({canonical name: version}, problems): every line must be ``name==version``."""
    pins: dict[str, str] = {}
    problems = []
    for number, text in requirement_lines(path):
        where = f"{path.name}:{number}"
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            problems.append(f"{where}: {text!r} does not parse: {exc}")
            continue
        specs = list(req.specifier)
        if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
            problems.append(f"{where}: {text!r} is not an exact pin; allowed: name==version")
            continue
        name = canonicalize_name(req.name)
        if name in pins:
            problems.append(f"{where}: {req.name} is pinned twice")
        pins[name] = specs[0].version
    return pins, problems


def pin_problems(wheel_list: Path, requirements: Path) -> tuple[dict[str, str], list[str]]:
    """The list's pins, and every problem: a line that is not an exact pin, or a pin that
    differs from ``requirements`` for the same package."""
    pins, problems = read_pins(wheel_list)
    env_pins, env_problems = read_pins(requirements)
    problems += env_problems
    for name, version in pins.items():
        if name in env_pins and env_pins[name] != version:
            problems.append(
                f"{wheel_list.name}: {name}=={version} differs from {requirements.name}'s "
                f"{name}=={env_pins[name]}; allowed: the same pin"
            )
    return pins, problems


def wheel_problems(pins: dict[str, str], folder: Path) -> list[str]:
    """A downloaded folder holds exactly one wheel per pin, with the pinned version; a
    folder that is not there is one problem, not one per pin."""
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        return [
            f"{folder} {what}; allowed: the folder benchmarks/gpu_proof/wheels.sh filled "
            "(GPU_PROOF_WHEELS)"
        ]
    found: dict[str, list[str]] = {}
    problems = []
    for wheel in sorted(folder.glob("*.whl")):
        try:
            name, version, _, _ = parse_wheel_filename(wheel.name)
        except InvalidWheelFilename as exc:
            problems.append(f"{wheel.name}: {exc}")
            continue
        found.setdefault(name, []).append(str(version))
    for name, version in pins.items():
        versions = found.pop(name, [])
        if versions != [str(Version(version))]:
            have = ", ".join(versions) or "none"
            problems.append(f"{folder}: {name}=={version} wanted, wheels found: {have}")
    problems += [f"{folder}: {name} {', '.join(v)} is not in the list" for name, v in found.items()]
    return problems
