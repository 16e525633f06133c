"""Whether the site can run a sweep's runs, asked before anything is submitted.

A site that cannot run a run otherwise fails only inside the run's allocation, after the
queue wait. Three questions, each answered once here:

- **the launcher**: ``launcher: local`` starts torchrun on the train job's own machine,
  in llmbench's Python, for the frameworks, variants and containers its record lists
  (``core.launchers``) and a GPU run of one node; a framework workload needs ``srun`` or
  a platform (the profile's site file sets it; ``launch.script`` refuses the same runs);
- **the framework**: a framework workload runs in its image (``container: enroot``, or a
  platform's image) or, with ``container: none``, in the stage venv, whose requirements
  file must install the framework;
- **HF_HOME**: a recipe that reads the model's Hugging Face config offline
  (``HF_HUB_OFFLINE=1`` among its reference settings) needs the cache on the nodes: the
  site's ``hf_home`` or HF_HOME in the environment, which launch.sh exports and mounts.
  On Kubernetes and Run:ai the pods' volumes are the site's: not checked here.

The workflow refuses a sweep with the first answer (one line, with how many runs it
concerns); ``llmbench plan``, often made before a site is chosen, prints it as a warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from llmbench.core.devices import device
from llmbench.core.launchers import launcher_traits
from llmbench.core.runspec import RunSpec
from llmbench.core.stage import needs_venv, venv_requirements_path
from llmbench.text import counted

FRAMEWORK_PACKAGES = {
    "nemo2": "nemo-toolkit",
    "megatron-bridge": "megatron-bridge",
    "megatron-core": "megatron-core",
    "maxtext": "maxtext",
}
"""The distribution a venv installs each framework as (its name on the package index)."""
MAX_REQUIREMENT_FILES = 16
MAX_REQUIREMENTS_BYTES = 1 << 20
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_INCLUDE = re.compile(r"^(-r|--requirement)[ =]?\s*(\S+)")
PROFILES_HINT = "snakemake --profile profiles/slurm reads profiles/slurm/site.yaml"


def launcher_refusal(spec: RunSpec) -> str | None:
    """Why the run's launcher cannot start it, else None."""
    traits = launcher_traits(spec.launcher)
    unfit = [
        (what, value, allowed)
        for what, value, allowed in (
            ("framework", spec.framework, traits.frameworks),
            ("variant", spec.variant, traits.variants),
            ("container", spec.container, traits.containers),
        )
        if allowed and value not in allowed
    ]
    if traits.on_this_machine and device(spec.gpu_type).has_gpus and spec.nodes > 1:
        unfit.append(("nodes", str(spec.nodes), ("1",)))
    if not unfit:
        return None
    what = ", ".join(f"{name} {value}" for name, value, _ in unfit)
    allowed = ", ".join(f"{name} {' or '.join(ok)}" for name, _, ok in unfit)
    return (
        f"run {spec.run_id}: launcher {spec.launcher} starts {allowed} on the train job's "
        f"own machine, not {what}; allowed: launcher srun or a platform, set in the "
        f"profile's site file ({PROFILES_HINT}; docs/profiles.md)"
    )


def framework_refusal(spec: RunSpec, venv: str | None, venv_packages: frozenset[str]) -> str | None:
    """Why the run would start without its framework, else None. ``venv``: the stage
    venv's requirements file; ``venv_packages``: the distributions it installs."""
    traits = launcher_traits(spec.launcher)
    if not needs_venv(spec) or spec.container != "none" or traits.platform:
        return None
    if traits.frameworks and spec.framework in traits.frameworks:
        return None  # llmbench's own Python runs it (the proof kit's Megatron-Core)
    package = FRAMEWORK_PACKAGES.get(spec.framework, spec.framework)
    if package in venv_packages:
        return None
    return (
        f"run {spec.run_id}: framework {spec.framework} with container none runs in the "
        f"stage venv, and setup.venv_requirements ({venv}) does not install {package}; "
        f"allowed: container: enroot in the site file (the run's image {spec.image or '-'}), "
        f"or a venv requirements file that pins {package}"
    )


def needs_hf_home(spec: RunSpec) -> bool:
    """The run's recipe reads the model's Hugging Face config offline."""
    return str(spec.parity.env.get("HF_HUB_OFFLINE", "")) == "1"


def hf_home(config: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """The Hugging Face cache the runs get: the site's ``hf_home``, else HF_HOME."""
    return config.get("hf_home") or environ.get("HF_HOME") or None


def hf_home_refusal(spec: RunSpec, cache: str | None) -> str | None:
    """Why the run would reach its recipe without the Hugging Face cache, else None."""
    if cache or launcher_traits(spec.launcher).platform or not needs_hf_home(spec):
        return None
    return (
        f"run {spec.run_id}: its recipe reads the model's Hugging Face config offline "
        "(HF_HUB_OFFLINE=1) and neither the site's hf_home nor HF_HOME is set; allowed: "
        "hf_home: /shared/path in the profile's site file, or HF_HOME in the environment "
        "(the folder holding the model's config; docs/slurm.md)"
    )


def site_refusal(
    specs: Sequence[RunSpec],
    config: Mapping[str, Any],
    base_dirs: Sequence[str | Path],
    environ: Mapping[str, str],
) -> str | None:
    """The first reason the site cannot run a run of the sweep, with the number of runs
    the same reason concerns; None when it can run them all."""
    venv = venv_requirements_path(config, base_dirs)
    packages = requirement_names(venv) if venv else frozenset()
    venv_name = config["setup"]["venv_requirements"]
    cache = hf_home(config, environ)
    checks: list[Callable[[RunSpec], str | None]] = [
        launcher_refusal,
        lambda spec: framework_refusal(spec, venv_name, packages),
        lambda spec: hf_home_refusal(spec, cache),
    ]
    for check in checks:
        refused = [line for line in map(check, specs) if line]
        if refused:
            more = len(refused) - 1
            return refused[0] + (f" ({counted(more, 'more run')} alike)" if more else "")
    return None


def requirement_names(path: str | Path) -> frozenset[str]:
    """The distributions a pip requirements file names (normalised as the package index
    does), following ``-r`` includes; a file that cannot be read names none."""
    names: set[str] = set()
    pending, seen = [Path(path)], set()
    while pending and len(seen) < MAX_REQUIREMENT_FILES:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            with open(current, "rb") as fh:
                text = fh.read(MAX_REQUIREMENTS_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        for raw in text.splitlines():
            line = raw.split(" #", 1)[0].strip()
            include = _INCLUDE.match(line)
            if include:
                pending.append(current.parent / include.group(2))
            elif line and not line.startswith(("#", "-")):
                match = _NAME.match(line)
                if match:
                    names.add(re.sub(r"[-_.]+", "-", match.group(0)).lower())
    return frozenset(names)
