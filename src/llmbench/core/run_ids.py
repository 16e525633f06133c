"""A run id read back into the sweep entry that makes it (``RunSpec.run_id`` the other way):
``<workload>_<size>_<dtype>_<gpu type>x<gpus>[-strong][-<release>]_<variant>``, so that any
catalog row can be rendered without a config that names it (``llmbench render``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from llmbench.core import embedded_workload
from llmbench.core.catalog import load_catalog
from llmbench.core.config import config_schema
from llmbench.core.runspec import DEFAULT_RELEASE
from llmbench.errors import ConfigError

FORM = "WORKLOAD_SIZE_DTYPE_GPUTYPExGPUS[-strong][-RELEASE]_VARIANT"
EXAMPLE = "qwen3-mbridge_235b-a22b_bf16_h100x256-v26.08_perf"
_SCALE = re.compile(
    r"(?P<gpu_type>[a-z0-9][a-z0-9-]*?)x(?P<gpus>[0-9]+)(?P<strong>-strong)?"
    r"(?:-(?P<release>v[0-9]{2}\.[0-9]{2}))?"
)


class RunIdError(ConfigError):
    """A run id that names no run: ``reason`` says which part and what is allowed."""

    def __init__(self, run_id: str, reason: str) -> None:
        self.shown, self.reason = _shown(run_id), reason
        super().__init__(f"run id {self.shown}: {reason}")


@dataclass(frozen=True)
class RunIdParts:
    """What a run id names; ``release`` is None where the id has no release tag."""

    workload: str
    size: str
    dtype: str
    gpu_type: str
    gpus: int
    scaling: str
    release: str | None
    variant: str


def _shown(run_id: str) -> str:
    return repr(run_id if len(run_id) <= 120 else f"{run_id[:60]}...[{len(run_id)} chars]")


def parse_run_id(run_id: str) -> RunIdParts:
    """The parts of ``run_id``; ConfigError naming the part that does not fit the form."""
    parts = run_id.split("_")
    if len(parts) != 5 or not all(parts):
        raise RunIdError(run_id, f"not of the form {FORM}; allowed: e.g. {EXAMPLE}")
    workload, size, dtype, scale, variant = parts
    match = _SCALE.fullmatch(scale)
    if match is None:
        raise RunIdError(
            run_id,
            f"scale {scale!r} is not GPUTYPExGPUS[-strong][-RELEASE]; allowed: e.g. h100x256, "
            "gb300x128-strong, h100x256-v26.08",
        )
    return RunIdParts(
        workload=workload,
        size=size,
        dtype=dtype,
        gpu_type=match["gpu_type"],
        gpus=int(match["gpus"]),
        scaling="strong" if match["strong"] else "weak",
        release=match["release"],
        variant=variant,
    )


def _variants() -> list[str]:
    sweep = config_schema()["properties"]["sweeps"]["items"]["properties"]
    return list(sweep["variants"]["items"]["enum"])


def sweep_entry_for(run_id: str, release: str | None = None) -> dict[str, Any]:
    """The ``sweeps`` entry whose one run is ``run_id`` (a catalog row, checked here, or
    the embedded workload); ``release`` is the one to use when the id names none.
    ConfigError naming the part of the id that is wrong and what is allowed."""
    parts = parse_run_id(run_id)
    if parts.release and release and parts.release != release:
        raise RunIdError(
            run_id,
            f"of release {parts.release}, not --release {release}; allowed: no --release, "
            f"or --release {parts.release}",
        )
    chosen = parts.release or release or DEFAULT_RELEASE
    if parts.variant not in _variants():
        raise RunIdError(
            run_id, f"variant {parts.variant!r} is not a variant; allowed: {', '.join(_variants())}"
        )
    entry: dict[str, Any] = {
        "workload": parts.workload,
        "sizes": [parts.size],
        "dtypes": [parts.dtype],
        "gpu_type": parts.gpu_type,
        "scales": [parts.gpus],
        "scaling": parts.scaling,
        "variants": [parts.variant],
    }
    if chosen != DEFAULT_RELEASE:
        entry["release"] = chosen
    if parts.workload == embedded_workload.WORKLOAD:
        return entry  # not in the catalog: the config check says what it allows
    try:
        load_catalog().row(
            parts.workload, parts.size, parts.dtype, parts.gpu_type, parts.gpus,
            parts.scaling, release=chosen,
        )  # fmt: skip
    except ConfigError as err:
        untagged = parts.release is None and str(err).startswith("release=")
        hint = " (another release's run id ends its scale with it: h100x256-v26.08)"
        raise RunIdError(run_id, f"{err}{hint if untagged else ''}") from None
    return entry
