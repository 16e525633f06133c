"""One error tree. Messages name the file/line or config key, the bad value and what is allowed."""

import re
import sys
from typing import NoReturn


class LlmbenchError(Exception):
    """Base of every error llmbench raises on purpose."""


class ConfigError(LlmbenchError):
    """A config value, catalog row or override that cannot run."""


class ParseError(LlmbenchError):
    """A training log that cannot be read at all (not: a log of a failed run)."""


class LaunchError(LlmbenchError):
    """A launch command or container operation that cannot be rendered or run."""


# A message is one line; a value pasted into it (a 10 MB string in a config) is cut.
LONG_RUN_CHARS = 120  # longest run of non-blank characters kept whole
LONG_MESSAGE_CHARS = 1000  # longest message kept whole


def one_line(message: str) -> str:
    """``message`` on one line: line breaks become spaces, a run of more than
    ``LONG_RUN_CHARS`` non-blank characters and a message of more than
    ``LONG_MESSAGE_CHARS`` are cut, and say how long they were."""
    flat = re.sub(r"\s*[\r\n]+\s*", " ", message).strip()
    flat = re.sub(
        rf"\S{{{LONG_RUN_CHARS + 1},}}",
        lambda m: f"{m.group()[:60]}...[{len(m.group())} chars]",
        flat,
    )
    if len(flat) > LONG_MESSAGE_CHARS:
        flat = f"{flat[: LONG_MESSAGE_CHARS // 2]}...[{len(flat)} chars]"
    return flat


def exit_with_error(message: object) -> NoReturn:
    """End the process with one line, ``llmbench: error: <message>``, and no traceback:
    how the workflow and its jobs stop on a bad value (the CLI prints the same line)."""
    sys.exit(f"llmbench: error: {one_line(str(message))}")
