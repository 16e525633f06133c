"""``llmbench calc``: throughput, TFLOPS/GPU, MFU and days to train from one step time,
with the catalog row for that scale (formulas of llama31-nemo2-h100.txt and siblings)."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from llmbench import metrics
from llmbench.catalog import RecipeRow, load_catalog, with_overrides
from llmbench.errors import ConfigError
from llmbench.flops import model_flops_per_sample

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
    parser.set_defaults(func=run)


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
    if args.format == "json":
        context = {"gbs": row.gbs, "seq_len": row.seq_len, "total_tokens": args.tokens}
        print(json.dumps({**result, **context}, indent=2))
        return 0
    print(f"{row.label()}  (gbs {row.gbs}, seq_len {row.seq_len}, source {row.source})")
    print(f"tokens_per_s          {result['tokens_per_s']:.2f}")
    print(f"tokens_per_s_per_gpu  {result['tokens_per_s_per_gpu']:.2f}")
    print(f"tflops_per_gpu        {result['tflops_per_gpu']:.2f}")
    print(f"mfu                   {result['mfu']:.4f} ({result['mfu_pct']:.2f} %)")
    print(f"days_to_train         {result['days_to_train']:.2f} ({args.tokens:g} tokens)")
    print(f"model_flops_per_sample {result['model_flops_per_sample']:.6e}")
    return 0
