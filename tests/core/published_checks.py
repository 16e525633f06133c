"""The published results reproduced from their step times: the check that each document's
derived numbers (throughput, days to train, MFU, worked FLOPs sums) follow from its own
formulas, or are listed in docs/spec-errata.md.

Throughput, days to train and MFU are recomputed with ``llmbench.core.metrics`` from each
printed step time and compared with the printed number to the digits it is printed with.
MFU uses the GBS=1 model FLOPs the document prints where it prints one (e.g. 4.74e14 for
Llama 3.1 8B), else the exact formula of that document's family for the row's shape.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llmbench.core import metrics
from llmbench.core.catalog.load import load_catalog, read_yaml
from llmbench.core.catalog.published import PublishedResult, load_published, published_result
from llmbench.core.catalog.query import Catalog
from llmbench.core.flops import flops_breakdown, model_flops_per_sample


def load_examples() -> tuple[PublishedResult, ...]:
    """The documents' worked throughput / days / MFU examples (``published.yaml``)."""
    examples = read_yaml("published.yaml")["examples"]
    return tuple(published_result(example, {}, "example") for example in examples)


def flops_examples() -> list[dict[str, Any]]:
    """The documents' worked FLOPs calculations, as printed (``published.yaml``)."""
    return [dict(e) for e in read_yaml("published.yaml")["flops_examples"]]


@dataclass(frozen=True)
class Disagreement:
    """A printed number that its own document's formula does not give."""

    source: str
    kind: str
    workload: str
    size: str
    dtype: str
    gpu_type: str
    gpus: int
    metric: str
    printed: float
    computed: float
    decimals: int

    @property
    def difference(self) -> float:
        """printed - computed, in the metric's unit."""
        return self.printed - self.computed

    def key(self) -> tuple[str, str, str, str, str, str, int, str]:
        return (
            self.source,
            self.kind,
            self.workload,
            self.size,
            self.dtype,
            self.gpu_type,
            self.gpus,
            self.metric,
        )


def reference_flops_per_sample(result: PublishedResult, catalog: Catalog | None = None) -> float:
    """GBS=1 model FLOPs the result's document uses: printed value, else its formula."""
    catalog = catalog or load_catalog()
    spec = catalog.model(result.workload, result.size, source=result.source)
    if spec.source == result.source and spec.printed_flops_per_sample is not None:
        return spec.printed_flops_per_sample
    row = catalog.row(result.workload, result.size, result.dtype, result.gpu_type, result.gpus)
    return model_flops_per_sample(spec, row.model_shape)


def seq_len(result: PublishedResult, catalog: Catalog) -> int:
    if result.seq_len is not None:
        return int(result.seq_len)
    return catalog.row(
        result.workload, result.size, result.dtype, result.gpu_type, result.gpus
    ).seq_len


def reproduce(result: PublishedResult, catalog: Catalog | None = None) -> dict[str, float]:
    """Recompute each printed metric from the step time (those the result prints)."""
    catalog = catalog or load_catalog()
    computed: dict[str, float] = {}
    if result.tokens_per_s is not None or result.days_to_train is not None:
        tps = metrics.tokens_per_s(seq_len(result, catalog), result.gbs, result.step_time_s)
        computed["tokens_per_s"] = tps
        if result.days_to_train is not None and result.total_tokens is not None:
            computed["days_to_train"] = metrics.days_to_train(result.total_tokens, tps)
    if result.mfu_pct is not None:
        peak_flops = catalog.gpu(result.gpu_type).peak_flops(result.dtype)
        if result.logged_tflops_per_gpu is not None:
            fraction = metrics.mfu_from_tflops(result.logged_tflops_per_gpu, peak_flops / 1e12)
        else:
            flops = reference_flops_per_sample(result, catalog)
            fraction = metrics.mfu(result.gbs, flops, result.step_time_s, result.gpus, peak_flops)
        computed["mfu_pct"] = 100 * fraction
    if result.tokens_per_s is None:
        computed.pop("tokens_per_s", None)
    return computed


def agrees(printed: float, computed: float, decimals: int) -> bool:
    """True when ``computed`` rounds to ``printed`` at ``decimals`` digits (half-unit)."""
    tolerance = 0.5 * 10.0**-decimals
    return abs(printed - computed) <= tolerance * (1 + 1e-9)


def agrees_significant(printed: float, computed: float, digits: int) -> bool:
    exponent = math.floor(math.log10(abs(printed)))
    return agrees(printed / 10**exponent, computed / 10**exponent, digits - 1)


def disagreements(catalog: Catalog | None = None) -> list[Disagreement]:
    """Every printed derived number its document's own formula does not reproduce."""
    catalog = catalog or load_catalog()
    found = []
    for result in (*load_published(), *load_examples()):
        for metric, value in reproduce(result, catalog).items():
            printed = getattr(result, metric)
            decimals = result.decimals[metric]
            if printed is not None and not agrees(printed, value, decimals):
                found.append(
                    Disagreement(
                        result.source,
                        result.kind,
                        result.workload,
                        result.size,
                        result.dtype,
                        result.gpu_type,
                        result.gpus,
                        metric,
                        printed,
                        value,
                        decimals,
                    )
                )
    found.extend(flops_disagreements(catalog))
    return found


def flops_disagreements(catalog: Catalog) -> list[Disagreement]:
    found = []
    for ex in flops_examples():
        spec = catalog.model(ex["workload"], ex["size"], source=ex["source"])
        parts = flops_breakdown(spec.flops_family, spec.shape)
        computed = {
            "attention_flops_per_token": float(parts.attention),
            "mlp_flops_per_token": float(parts.mlp),
            "embedding_flops_per_token": float(parts.embedding),
        }
        for metric, value in computed.items():
            if not agrees(float(ex[metric]), value, 0):
                found.append(flops_disagreement(ex, spec.source, metric, value, 0))
        total = model_flops_per_sample(spec)
        digits = int(ex["model_flops_significant_digits"])
        if not agrees_significant(float(ex["model_flops_per_sample"]), total, digits):
            found.append(flops_disagreement(ex, spec.source, "model_flops_per_sample", total, 0))
    return found


def flops_disagreement(
    ex: Mapping[str, Any], source: str, metric: str, computed: float, decimals: int
) -> Disagreement:
    return Disagreement(
        source, "flops_example", ex["workload"], ex["size"], "-", "-", 0, metric,
        float(ex[metric]), computed, decimals,
    )  # fmt: skip
