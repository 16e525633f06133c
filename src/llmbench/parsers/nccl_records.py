"""NCCL debug records found in a piece of text, whatever surrounds them.

A record is ``<host>:<pid>:<tid> [<cudaDev>] NCCL INFO <message>`` (``... <file>:<line>
NCCL WARN ...`` for warnings, NCCL ``src/debug.cc``). Wrappers put their own text in front
(mpirun's ``[1,0]<stdout>:``, Ray's ``(pid=..)``, a time stamp, a launcher's ``<host>: ``)
and a copy can glue two records on one line, so records are found by that pattern anywhere
in a piece: at each ``NCCL INFO``, the prefix just before it. When a record is glued to the
text before it, the host it seems to have carries the end of that text
(``...Using network Socketgpu1:1234:...``): where a tail of it is a host already seen
with that process id, that tail is the host and the rest goes back to the text before. Text
with no record in it (a bare ``NCCL version`` line, lines whose prefix a poster removed)
is one record of the file's own process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LEVEL = re.compile(r"NCCL (?:INFO|WARN|TRACE) ?")
_HEAD = re.compile(
    r"(?P<host>[^\s:\[\]]{1,253}):(?P<pid>\d{1,10}):(?P<tid>\d{1,10}) \[\d{1,4}\] "
    r"(?:[^\s\[]{1,200} ){0,3}$"
)
_WHOLE = re.compile(
    r"(?P<host>[^\s:\[\]]{1,253}):(?P<pid>\d{1,10}):(?P<tid>\d{1,10}) \[\d{1,4}\] "
    r"(?:[^\s\[]{1,200} ){0,3}?NCCL (?:INFO|WARN|TRACE) ?"
)
"""A piece that is one record from its first character: the common case, read at once."""
HEAD_CHARS = 1024
"""How far before ``NCCL INFO`` a record's prefix may start. Every length in it is bounded
(a host name has at most 253 characters), so finding records costs time linear in the
text, however long a run of characters without a record is."""


@dataclass(frozen=True, slots=True)
class Record:
    """One record: who printed it and what it says."""

    host: str  # "" for text without a record prefix
    process: str  # host:pid, or the file's name for text without a prefix
    thread: str
    message: str
    text: str  # the whole record as it stands in the file, for quoting


@dataclass(frozen=True)
class _Prefix:
    start: int
    host_end: int
    end: int
    host: str
    pid: str
    tid: str


def _prefixes(text: str) -> list[_Prefix]:
    found = []
    for level in _LEVEL.finditer(text):
        head = _HEAD.search(text, max(0, level.start() - HEAD_CHARS), level.start())
        if head is not None:
            found.append(
                _Prefix(
                    start=head.start(),
                    host_end=head.end("host"),
                    end=level.end(),
                    host=head.group("host"),
                    pid=head.group("pid"),
                    tid=head.group("tid"),
                )
            )
    return found


def records(text: str, default_process: str, known: dict[str, set[str]]) -> list[Record]:
    """The records in ``text``; ``known`` maps a process id to the hosts seen with it and
    is updated as records are found."""
    if text.count("NCCL ") == 1 and (whole := _WHOLE.match(text)) is not None:
        host = _seen_tail(whole.group("host"), whole.group("pid"), known)
        known.setdefault(whole.group("pid"), set()).add(host)
        start = whole.end("host") - len(host)
        process = f"{host}:{whole.group('pid')}"
        message = text[whole.end() :]
        return [Record(host, process, whole.group("tid"), message, text[start:].strip())]
    prefixes = _prefixes(text) if "NCCL " in text else []
    if not prefixes:
        return [Record("", default_process, "", text, text.strip())] if text.strip() else []
    starts = [p.start for p in prefixes]
    hosts = [p.host for p in prefixes]
    for i, prefix in enumerate(prefixes):
        hosts[i] = _seen_tail(hosts[i], prefix.pid, known)
        starts[i] = prefix.host_end - len(hosts[i])
        known.setdefault(prefix.pid, set()).add(hosts[i])
    found = []
    for i, prefix in enumerate(prefixes):
        end = starts[i + 1] if i + 1 < len(prefixes) else len(text)
        found.append(
            Record(
                host=hosts[i],
                process=f"{hosts[i]}:{prefix.pid}",
                thread=prefix.tid,
                message=text[prefix.end : end],
                text=text[starts[i] : end].strip(),
            )
        )
    return found


def _seen_tail(host: str, pid: str, known: dict[str, set[str]]) -> str:
    """``host`` when it was seen with process ``pid`` (or nothing was), else its longest
    tail that was: the rest is the end of a record glued in front."""
    seen_hosts = known.get(pid, set())
    if host in seen_hosts:
        return host
    for seen in sorted(seen_hosts, key=len, reverse=True):
        if host.endswith(seen):
            return seen
    return host
