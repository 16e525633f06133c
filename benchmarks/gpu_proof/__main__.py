"""``python -m benchmarks.gpu_proof <step> ...``: one step of the GPU proof kit
(benchmarks/gpu_proof/run.sh runs them in order, each under its own time limit).

Exit codes: 0 done, 1 the step ran and found a problem, 2 bad arguments."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.gpu_proof.environment import environment
from benchmarks.gpu_proof.framework import SIZES, run_framework
from benchmarks.gpu_proof.node import node_checks
from benchmarks.gpu_proof.summary import write_summary
from benchmarks.gpu_proof.tables import combined_tables
from benchmarks.gpu_proof.wheels import pin_problems, wheel_problems
from llmbench.core.devices import embedded_kinds
from llmbench.core.limits import RunLimits
from llmbench.files.atomic import write_json_atomic
from llmbench.text import counted

DTYPES = ("fp32", "bf16")


def _wheels(args: argparse.Namespace) -> int:
    pins, problems = pin_problems(args.list, args.pins)
    if args.wheels is not None:
        problems += wheel_problems(pins, args.wheels)
    for problem in problems:
        print(f"wheels: {problem}", file=sys.stderr)
    where = f", and {args.wheels} holds their wheels" if args.wheels else ""
    if args.wheels is not None and not args.wheels.is_dir():
        where = f"; the wheels folder {args.wheels} does not exist"
    print(
        f"wheels: {len(pins)} exact pins in {args.list}{where}; {counted(len(problems), 'problem')}"
    )
    return 1 if problems else 0


def _environment(args: argparse.Namespace) -> int:
    info = environment(gpu=args.gpu, pyproject=args.pyproject)
    write_json_atomic(args.out, info)
    print(json.dumps({k: info[k] for k in ("python", "host", "nvidia_smi")}))
    return _verdict("environment", info["problems"])


def _verdict(step: str, problems: list[str]) -> int:
    """The step's last line, which the summary shows as its reason: ok, or its problems."""
    print(f"{step}: " + ("; ".join(problems) if problems else "ok"))
    return 1 if problems else 0


def _node(args: argparse.Namespace) -> int:
    result = node_checks(args.folder, gpu=not args.cpu)
    print(json.dumps({k: result.get(k) for k in ("checks", "skipped", "busbw_gbps")}))
    return _verdict("node", result["problems"])


def _dtypes(text: str) -> list[str]:
    dtypes = [d for d in text.split(",") if d]
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: {', '.join(DTYPES)}, comma-separated")
    return dtypes


def _framework(args: argparse.Namespace) -> int:
    first, last = args.window
    if not 0 <= first <= last < args.steps:
        print(
            f"benchmarks.gpu_proof framework: error: --window {first} {last}: allowed: "
            f"0 <= first <= last < --steps ({args.steps})",
            file=sys.stderr,
        )
        return 2
    limits = RunLimits(args.time_limit_s, startup_s=args.time_limit_s, stall_s=60)
    out = run_framework(
        args.folder, args.gpu_type, args.size, args.dtypes, args.steps, (first, last),
        args.period_ms, limits,
    )  # fmt: skip
    print(json.dumps({k: out.get(k) for k in ("check", "runs")}))
    print(f"framework: {out['status']}" + (f": {out['reason']}" if out.get("reason") else ""))
    return 1 if out["status"] == "failed" else 0


def _summary(args: argparse.Namespace) -> int:
    try:
        combined_tables(args.outdir)
    except Exception as exc:  # the summary still reports what the workflow's tables hold
        print(f"summary: combined tables not written: {type(exc).__name__}: {exc}")
    return 0 if write_summary(args.outdir)["ok"] else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_proof", description=__doc__)
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("wheels", help="check the wheel list's pins (and a wheels folder)")
    p.add_argument("--list", type=Path, required=True, help="benchmarks/gpu_proof/wheels.txt")
    p.add_argument("--pins", type=Path, required=True, help="envs/requirements.txt")
    p.add_argument("--wheels", type=Path, help="a folder wheels.sh filled")
    p.set_defaults(func=_wheels)
    p = sub.add_parser("environment", help="versions, GPUs and imports")
    p.add_argument("out", type=Path, help="environment.json to write")
    p.add_argument("--gpu", action="store_true", help="a GPU box: a torch without CUDA fails")
    p.add_argument("--pyproject", type=Path, help="llmbench's pyproject.toml: version ranges")
    p.set_defaults(func=_environment)
    p = sub.add_parser("node", help="the preflight's single-node checks")
    p.add_argument("folder", type=Path)
    p.add_argument("--cpu", action="store_true", help="the CPU checks (the dry mode)")
    p.set_defaults(func=_node)
    p = sub.add_parser("framework", help="Megatron-Core's GPTModel through its entry point")
    p.add_argument("folder", type=Path)
    p.add_argument("--gpu-type", choices=embedded_kinds(), required=True)
    p.add_argument("--size", choices=sorted(SIZES), required=True)
    p.add_argument("--dtypes", type=_dtypes, default=list(DTYPES))
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--window", type=int, nargs=2, metavar=("FIRST", "LAST"), required=True)
    p.add_argument("--period-ms", type=int, default=100, help="telemetry sampling period")
    p.add_argument("--time-limit-s", type=int, default=150, help="per run, startup included")
    p.set_defaults(func=_framework)
    p = sub.add_parser("summary", help="combined tables, summary.json and summary.txt")
    p.add_argument("outdir", type=Path)
    p.set_defaults(func=_summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
