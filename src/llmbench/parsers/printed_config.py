"""The logging cadence a framework printed in its configuration, for logs whose step lines
cannot tell it (one iteration line, or two that may straddle a missing one).

Megatron prints its arguments at start-up and Megatron-Bridge its whole configuration as
YAML; both carry the interval at which iteration lines are printed:

```text
  log_interval .................................... 10        (Megatron's arguments block)
  log_interval: 10                                          (Megatron-Bridge's config dump)
```

NeMo 2 prints no configuration of its own, and its iteration lines follow the strategy's
``progress_interval``, not ``trainer.log_every_n_steps``; MaxText logs every step. Only
Megatron(-Bridge) logs are looked at here (``PRINTED_FORMS``).

The configuration is printed before training starts, so only the log's first
``HEAD_BYTES`` are searched, with the scanner the step lines use (bounded lines, regular
files only). A value counts only when the whole line is that one setting: another rank's
output glued into the printed configuration (Megatron-Bridge issue 1184) hides it rather
than giving a wrong number.
"""

from __future__ import annotations

import os
import re
from contextlib import closing
from dataclasses import dataclass

from llmbench.parsers.scan import WINDOW_BYTES, LineScanner, Needle, plain_line
from llmbench.parsers.vocabulary import Framework

HEAD_BYTES = 32 << 20
"""The part of a log searched for the printed configuration: what comes before training."""
_NEEDLE = Needle(b"log_interval", "printed_config")
# the key alone (not tensorboard_log_interval, not args.log_interval), then its value
# and nothing after it but blanks; a rank prefix, timestamp or indent may come before it
_KEY = rb"(?<![\w.])log_interval"
PRINTED_FORMS: dict[Framework, tuple[tuple[str, re.Pattern[bytes]], ...]] = {
    Framework.MEGATRON: (
        ("Megatron arguments", re.compile(_KEY + rb" \.{2,} (\d{1,9})\s*$")),
        ("Megatron-Bridge config", re.compile(_KEY + rb":[ \t]+(\d{1,9})\s*$")),
    ),
}


@dataclass(frozen=True)
class PrintedInterval:
    """An interval the log printed, where, and the line that says so."""

    value: int
    form: str  # which printed form: "Megatron arguments", "Megatron-Bridge config"
    line: str  # the line as printed (stripped, at most 200 characters)

    def __str__(self) -> str:
        return f"{self.form}: {self.line!r}"


def printed_interval(
    source: str | os.PathLike[str] | bytes,
    framework: Framework,
    head_bytes: int = HEAD_BYTES,
) -> PrintedInterval | None:
    """The log interval the configuration printed in ``source`` sets, or None when it was
    not printed (or not in a form known for ``framework``) or printed with two values."""
    forms = PRINTED_FORMS.get(framework)
    if not forms:
        return None
    scanner = LineScanner([_NEEDLE], tail_bytes=0, window_bytes=WINDOW_BYTES)
    found: list[PrintedInterval] = []
    try:
        windows = (
            scanner.scan_bytes(source) if isinstance(source, bytes) else scanner.scan_file(source)
        )
        with closing(windows):
            # windows come in file order, WINDOW_BYTES of the file each: the head's only
            for _, hits in zip(range(-(-head_bytes // WINDOW_BYTES)), windows, strict=False):
                found += [
                    p for h in hits if h.offset < head_bytes and (p := _printed(h.line, forms))
                ]
    except OSError:
        return None  # the log went away or changed kind since its step lines were read
    if not found or len({p.value for p in found}) > 1:
        return None  # two runs' configurations in one log: the lines alone must tell
    return found[0]


def _printed(
    line: bytes, forms: tuple[tuple[str, re.Pattern[bytes]], ...]
) -> PrintedInterval | None:
    for form, pattern in forms:
        if (match := pattern.search(plain_line(line))) and (value := int(match.group(1))) >= 1:
            text = plain_line(line).decode("utf-8", "replace").strip()
            return PrintedInterval(value, form, text[:200])
    return None
