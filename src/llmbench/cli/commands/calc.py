"""``llmbench calc``: throughput, TFLOPS/GPU, MFU and days to train from one step time,
with the catalog row for that scale (formulas of llama31-nemo2-h100.txt and siblings)."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from llmbench.errors import ConfigError
from llmbench.parsers.summary import MAX_STEP_TIME_S
from llmbench.spec import metrics
from llmbench.spec.catalog import RecipeRow, load_catalog, with_overrides
from llmbench.spec.flops import model_flops_per_sample

DEFAULT_TOKENS = 1e12


def register(subparsers: Any) -> None:
    """Add the ``calc`` subcommand."""
    parser = subparsers.add_parser(
        "calc", help="tokens/s, TFLOPS/GPU, MFU and days to train from a step time"
    )
    parser.add_argument("--workload", required=True)
    parser.add_argument("--size", required=True)
    parser.add_argument("--dtype", required=True)
    parser.add_argument("--gpu-type", required=True)
    parser.add_argument("--gpus", required=True, type=int)
    parser.add_argument("--step-time", required=True, type=float, help="seconds per step")
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


def implausible(row: RecipeRow, result: dict[str, float]) -> list[str]:
    """Flags of numbers that cannot be true: MFU above 100 % is TFLOPS/GPU above the
    datasheet peak of the row's GPU and dtype."""
    return ["mfu_above_100pct"] if result["mfu"] > 1 else []


def compute(row: RecipeRow, step_time_s: float, total_tokens: float) -> dict[str, float]:
    """The derived numbers for one row and step time (keys documented in docs/catalog.md)."""
    if not math.isfinite(step_time_s) or step_time_s <= 0:
        raise ConfigError(f"step_time={step_time_s}: must be a positive number of seconds")
    if not math.isfinite(total_tokens) or total_tokens <= 0:
        raise ConfigError(f"tokens={total_tokens}: must be a positive number")
    assert row.model is not None and row.gpu is not None
    flops = model_flops_per_sample(row.model, row.model_shape)
    tokens_per_s = metrics.tokens_per_s(row.seq_len, row.gbs, step_time_s)
    tflops = metrics.tflops_per_gpu(row.gbs, flops, step_time_s, row.gpus)
    mfu = metrics.mfu_from_tflops(tflops, row.gpu.peak_tflops[row.dtype])
    return {
        "tokens_per_s": tokens_per_s,
        "tokens_per_s_per_gpu": metrics.tokens_per_s_per_gpu(tokens_per_s, row.gpus),
        "tflops_per_gpu": tflops,
        "mfu": mfu,
        "mfu_pct": 100 * mfu,
        "days_to_train": metrics.days_to_train(total_tokens, tokens_per_s),
        "model_flops_per_sample": flops,
    }


def run(args: argparse.Namespace) -> int:
    """Look the row up, apply --gbs, print the numbers; ConfigError (exit 2) on bad input."""
    row = load_catalog().row(
        args.workload, args.size, args.dtype, args.gpu_type, args.gpus, scaling=args.scaling
    )
    if args.gbs is not None:
        row = with_overrides(row, gbs=args.gbs)
    result = compute(row, args.step_time, args.tokens)
    assert row.gpu is not None
    peak = row.gpu.peak_tflops[row.dtype]
    # The step time at 100 % MFU: any shorter one is above the datasheet peak.
    floor_s = row.gbs * result["model_flops_per_sample"] / row.gpus / (peak * 1e12)
    allowed = f"allowed: a step time of {floor_s:.3g} s (100 % MFU) to {MAX_STEP_TIME_S:g} s"
    if args.step_time > MAX_STEP_TIME_S or not all(map(math.isfinite, result.values())):
        raise ConfigError(f"step_time={args.step_time}: not a plausible step time; {allowed}")
    flags = implausible(row, result)
    if flags and not args.allow_implausible:
        raise ConfigError(
            f"step_time={args.step_time}: MFU {result['mfu_pct']:.4g} % "
            f"({result['tflops_per_gpu']:.4g} TFLOPS/GPU) is above the {row.gpu_type} "
            f"{row.dtype} datasheet peak of {peak:g} TFLOPS; {allowed}, or "
            "--allow-implausible to print it flagged"
        )
    if args.format == "json":
        context = {"gbs": row.gbs, "seq_len": row.seq_len, "total_tokens": args.tokens}
        print(json.dumps({**result, **context, "flags": flags}, indent=2))
        return 0
    print(f"{row.label()}  (gbs {row.gbs}, seq_len {row.seq_len}, source {row.source})")
    print(f"tokens_per_s          {result['tokens_per_s']:.2f}")
    print(f"tokens_per_s_per_gpu  {result['tokens_per_s_per_gpu']:.2f}")
    print(f"tflops_per_gpu        {result['tflops_per_gpu']:.2f}")
    print(f"mfu                   {result['mfu']:.4f} ({result['mfu_pct']:.2f} %)")
    print(f"days_to_train         {result['days_to_train']:.2f} ({args.tokens:g} tokens)")
    print(f"model_flops_per_sample {result['model_flops_per_sample']:.6e}")
    if flags:
        print(f"flags                 {','.join(flags)} (implausible: above the datasheet peak)")
    return 0
