"""The ``llmbench`` command. Each subcommand lives in ``llmbench.commands.<name>`` and
exposes ``register(subparsers)``, which adds its parser and sets ``func``."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from llmbench import __version__, commands
from llmbench.errors import LlmbenchError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llmbench", description="LLM pre-training performance benchmarks."
    )
    parser.add_argument("--version", action="version", version=f"llmbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"llmbench.commands.{info.name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; usage and llmbench errors exit 2 with a one-line message."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except LlmbenchError as err:
        print(f"llmbench {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `llmbench ... | head` is normal use
        return 0


if __name__ == "__main__":
    sys.exit(main())
