"""``llmbench calc``: throughput, TFLOPS/GPU, MFU and days to train from one step time, for
any catalog row of any release, computed as the runs table computes them for a run of that
row (its run spec, ``llmbench.aggregate.run_facts`` and ``llmbench.core.metrics``)."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from typing import Any

from llmbench.aggregate.run_facts import bf16_peak_tflops, model_flops, peak_for
from llmbench.core import metrics
from llmbench.core.catalog import RecipeRow, load_catalog, with_overrides
from llmbench.core.catalog.records import PEAK_DTYPE, PRECISIONS
from llmbench.core.config import run_specs, validate_config
from llmbench.core.runspec import DEFAULT_RELEASE
from llmbench.errors import ConfigError
from llmbench.parsers.summary import MAX_STEP_TIME_S

DEFAULT_TOKENS = 1e12
SITE = {"launcher": "srun", "container": "enroot"}
"""Where a catalog row runs as the reference runs it (its run spec's model and peak do not
depend on it; the parity block does)."""


def register(subparsers: Any) -> None:
    """Add the ``calc`` subcommand."""
    parser = subparsers.add_parser(
        "calc", help="tokens/s, TFLOPS/GPU, MFU and days to train from a step time"
    )
    parser.add_argument("--workload", required=True)
    parser.add_argument("--size", required=True)
    parser.add_argument(
        "--dtype",
        required=True,
        help="bf16, fp8, nvfp4, or the row's precision (fp8-current, fp8-blockwise, "
        "fp8-delayed, mxfp8), which must be the one the row trains in",
    )
    parser.add_argument("--gpu-type", required=True)
    parser.add_argument("--gpus", required=True, type=int)
    parser.add_argument("--step-time", required=True, type=float, help="seconds per step")
    parser.add_argument(
        "--release",
        default=DEFAULT_RELEASE,
        help=f"reference release of the row (default {DEFAULT_RELEASE}; "
        "`llmbench recipes --release all` lists every row)",
    )
    parser.add_argument("--gbs", type=int, help="global batch size (default: the row's)")
    parser.add_argument(
        "--tokens", type=float, default=DEFAULT_TOKENS, help="tokens to train (default 1e12)"
    )
    parser.add_argument("--scaling", choices=("weak", "strong"), default="weak")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument(
        "--allow-implausible",
        action="store_true",
        help="print numbers above the GPU's datasheet peak (MFU > 100 %%), flagged, "
        "instead of refusing them",
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class CalcRow:
    """The catalog row asked for, and the run spec a sweep of it gets (``gbs_from``: the
    row's GBS, ``catalog``, or ``--gbs``)."""

    row: RecipeRow
    spec: dict[str, Any]
    gbs_from: str


def _dtype_and_precision(value: str) -> tuple[str, str | None]:
    """``--dtype`` as (catalog dtype, precision the row must train in, if one was named)."""
    dtypes = sorted({r.dtype for r in load_catalog().rows(release=None)})
    if value in dtypes:
        return value, None
    if value in PRECISIONS:
        return PEAK_DTYPE.get(value, value), value
    raise ConfigError(
        f"dtype={value!r} is not a dtype or precision; allowed: {', '.join(dtypes)}, "
        f"or a precision: {', '.join(p for p in PRECISIONS if p not in dtypes)}"
    )


def calc_row(args: argparse.Namespace) -> CalcRow:
    """The row for the arguments (``--gbs`` applied and checked) and its run spec."""
    dtype, precision = _dtype_and_precision(args.dtype)
    catalog = load_catalog()
    try:
        row = catalog.row(
            args.workload, args.size, dtype, args.gpu_type, args.gpus,
            scaling=args.scaling, release=catalog.release_name(args.release),
        )  # fmt: skip
    except ConfigError as err:
        hint = " (--release)" if str(err).startswith("release=") else ""
        raise ConfigError(f"{err}{hint}") from None
    if precision is not None and row.precision != precision:
        raise ConfigError(
            f"dtype={precision}: {row.label()} (release {row.release}) trains "
            f"{row.precision}; allowed: {row.dtype}, {row.precision}"
        )
    config = validate_config({**SITE, "sweeps": [row.sweep_entry()]})
    spec = run_specs(config)[0].to_dict()
    if args.gbs is None:
        return CalcRow(row, spec, "catalog")
    row = with_overrides(row, gbs=args.gbs)
    return CalcRow(row, {**spec, "global_batch_size": row.gbs}, "--gbs")


def compute(spec: dict[str, Any], step_time_s: float, total_tokens: float) -> dict[str, float]:
    """The runs table's numbers for a run of ``spec`` at ``step_time_s`` (the same
    functions: docs/tables.md names each one)."""
    if not math.isfinite(step_time_s) or step_time_s <= 0:
        raise ConfigError(f"step_time={step_time_s}: must be a positive number of seconds")
    if not math.isfinite(total_tokens) or total_tokens <= 0:
        raise ConfigError(f"tokens={total_tokens}: must be a positive number")
    flops = model_flops(spec["model"])
    peak = peak_for(spec, None)
    assert peak is not None  # a catalog GPU type has its datasheet peak
    peak_tflops = peak.flops_per_s / metrics.FLOPS_PER_TFLOPS
    bf16_tflops = bf16_peak_tflops(spec["gpu_type"])
    gbs, gpus = spec["global_batch_size"], spec["gpus"]
    tokens_per_s = metrics.tokens_per_s(spec["seq_len"], gbs, step_time_s)
    mfu = metrics.mfu(gbs, flops, step_time_s, gpus, peak_tflops * metrics.FLOPS_PER_TFLOPS)
    return {
        "tokens_per_s": tokens_per_s,
        "tokens_per_s_per_gpu": metrics.tokens_per_s_per_gpu(tokens_per_s, gpus),
        "tflops_per_gpu": metrics.tflops_per_gpu(gbs, flops, step_time_s, gpus),
        "mfu": mfu,
        "mfu_pct": 100 * mfu,
        "mfu_bf16": metrics.mfu(
            gbs, flops, step_time_s, gpus, bf16_tflops * metrics.FLOPS_PER_TFLOPS
        ),
        "peak_tflops_per_gpu": peak_tflops,
        "bf16_peak_tflops_per_gpu": bf16_tflops,
        "days_to_train": metrics.days_to_train(total_tokens, tokens_per_s),
        "model_flops_per_sample": flops,
    }


def _check_plausible(
    args: argparse.Namespace, calc: CalcRow, result: dict[str, float]
) -> list[str]:
    """Refuse a step time no run can have; flags for numbers above the datasheet peak."""
    spec = calc.spec
    peak_flops = result["peak_tflops_per_gpu"] * metrics.FLOPS_PER_TFLOPS
    # The step time at 100 % MFU: any shorter one is above the datasheet peak.
    gbs, gpus = spec["global_batch_size"], spec["gpus"]
    floor_s = gbs * result["model_flops_per_sample"] / gpus / peak_flops
    if floor_s > MAX_STEP_TIME_S:  # the batch, not the step time, is what cannot be
        most = int(MAX_STEP_TIME_S * gpus * peak_flops // result["model_flops_per_sample"])
        raise ConfigError(
            f"gbs={gbs}: one step would take at least {floor_s:.3g} s (at 100 % MFU), more "
            f"than {MAX_STEP_TIME_S:g} s; allowed: a GBS of at most {most}"
        )
    allowed = f"allowed: a step time of {floor_s:.3g} s (100 % MFU) to {MAX_STEP_TIME_S:g} s"
    if args.step_time > MAX_STEP_TIME_S or not all(map(math.isfinite, result.values())):
        raise ConfigError(f"step_time={args.step_time}: not a plausible step time; {allowed}")
    flags = ["mfu_above_100pct"] if result["mfu"] > 1 else []
    if flags and not args.allow_implausible:
        raise ConfigError(
            f"step_time={args.step_time}: MFU {result['mfu_pct']:.4g} % "
            f"({result['tflops_per_gpu']:.4g} TFLOPS/GPU) is above the {spec['gpu_type']} "
            f"{spec['dtype']} datasheet peak of {result['peak_tflops_per_gpu']:g} TFLOPS; "
            f"{allowed}, or --allow-implausible to print it flagged"
        )
    return flags


def run(args: argparse.Namespace) -> int:
    """Look the row up, apply --gbs, print the numbers; ConfigError (exit 2) on bad input."""
    calc = calc_row(args)
    result = compute(calc.spec, args.step_time, args.tokens)
    flags = _check_plausible(args, calc, result)
    row, spec = calc.row, calc.spec
    context = {
        "release": row.release,
        "precision": row.precision,
        "gbs": spec["global_batch_size"],
        "gbs_from": calc.gbs_from,
        "seq_len": spec["seq_len"],
        "total_tokens": args.tokens,
    }
    if args.format == "json":
        print(json.dumps({**result, **context, "flags": flags}, indent=2))
        return 0
    print_table(calc, result, args.tokens, flags)
    return 0


def print_table(calc: CalcRow, result: dict[str, float], tokens: float, flags: list[str]) -> None:
    row, spec = calc.row, calc.spec
    gbs = spec["global_batch_size"]
    gbs_note = "from --gbs" if calc.gbs_from == "--gbs" else "the catalog row's; --gbs to change"
    print(f"{row.label()}, release {row.release}, precision {row.precision}")
    print(f"gbs {gbs} ({gbs_note}), seq_len {spec['seq_len']}, source {row.source}")
    print(f"tokens_per_s          {result['tokens_per_s']:.2f}")
    print(f"tokens_per_s_per_gpu  {result['tokens_per_s_per_gpu']:.2f}")
    print(f"tflops_per_gpu        {result['tflops_per_gpu']:.2f}")
    print(
        f"mfu                   {result['mfu']:.4f} ({result['mfu_pct']:.2f} % of the "
        f"{spec['dtype']} peak, {result['peak_tflops_per_gpu']:g} TFLOPS)"
    )
    print(
        f"mfu_bf16              {result['mfu_bf16']:.4f} (of the bf16 peak, "
        f"{result['bf16_peak_tflops_per_gpu']:g} TFLOPS)"
    )
    print(f"days_to_train         {result['days_to_train']:.2f} ({tokens:g} tokens)")
    print(f"model_flops_per_sample {result['model_flops_per_sample']:.6e}")
    if flags:
        print(f"flags                 {','.join(flags)} (implausible: above the datasheet peak)")
