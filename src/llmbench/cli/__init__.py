"""Where a person types it: the ``llmbench`` command; one module per subcommand."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from typing import NoReturn

from llmbench import __version__
from llmbench.cli import commands
from llmbench.errors import LlmbenchError, one_line


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line usage error (argparse prints the usage block first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="llmbench", description="LLM pre-training performance benchmarks.")
    parser.add_argument("--version", action="version", version=f"llmbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"llmbench.cli.commands.{info.name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; usage and llmbench errors exit 2 with a one-line message."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named with the subcommand whose options they are not
        parser.exit(
            2,
            f"llmbench {args.command}: error: unrecognized arguments: "
            f"{one_line(' '.join(unknown))} (see llmbench {args.command} --help)\n",
        )
    try:
        return int(args.func(args))
    except LlmbenchError as err:
        print(f"llmbench {args.command}: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `llmbench ... | head` is normal use
        return 0
