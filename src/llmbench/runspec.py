"""The resolved specification of one run: everything needed to launch it and read it back."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

KEY_FIELDS = ("workload", "size", "dtype", "gpu_type", "gpus", "scaling", "variant")
"""The axes that identify a run; the run id is built from them."""


@dataclass(frozen=True)
class RunSpec:
    workload: str
    framework: str
    size: str
    dtype: str
    gpu_type: str
    gpus: int
    nodes: int
    gpus_per_node: int
    variant: str
    scaling: str
    steps: int
    window: tuple[int, int]
    seq_len: int
    micro_batch_size: int
    global_batch_size: int
    parallelism: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)
    launcher: str = "local"
    container: str = "none"
    threads_per_rank: int = 1
    image: str = ""

    @property
    def run_id(self) -> str:
        """Readable, stable id, e.g. ``tiny-llama_tiny_bf16_cpux2_perf`` or
        ``nemotron4-nemo_340b_fp8_gb200x128-strong_perf``."""
        scale = f"{self.gpu_type}x{self.gpus}" + ("-strong" if self.scaling == "strong" else "")
        return f"{self.workload}_{self.size}_{self.dtype}_{scale}_{self.variant}"

    @property
    def group_id(self) -> str:
        """Runs that form one scaling curve differ only in scale and dtype."""
        return f"{self.workload}_{self.size}_{self.gpu_type}_{self.scaling}"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["window"] = list(self.window)
        data["run_id"] = self.run_id
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["window"] = tuple(fields["window"])
        return cls(**fields)
