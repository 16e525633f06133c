"""What NCCL's debug output says about the transport it used (docs/transport.md).

A GPU launch runs with ``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET`` and
``NCCL_DEBUG_FILE=<attempt>/nccl-debug.%h.%p.log``: one file per process. ``read_transport``
reads such files, or any log with NCCL's lines in it (a training job's, nccl-tests'):
``debug_lines`` reads each within fixed bounds, ``nccl_records`` finds the records,
the extractor table of ``transport_facts`` files what they say and ``transport_fields``
decides every field, with why and the lines that show it. A field the lines cannot settle
is ``unknown``, with the reason.

``transport.json`` (schema ``SCHEMA_VERSION``) holds the fields with their reasons and
quotes (``fields``), and, for the readers of the first layout, the same values flat
(``net_transport``, ``gdr``, ...) with ``socket_inter_node`` and the ``evidence`` list.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llmbench.core.run_folder import is_nccl_debug_file
from llmbench.parsers import transport_fields as decide
from llmbench.parsers.debug_lines import pieces, refusal
from llmbench.parsers.nccl_records import records
from llmbench.parsers.transport_facts import EXTRACTORS, Extractor, Facts, Plan, Seen, extract, plan
from llmbench.parsers.transport_fields import FIELDS, UNKNOWN, Answer, network_kind

__all__ = [
    "EXTRACTORS",
    "FIELDS",
    "UNKNOWN",
    "Answer",
    "TransportReport",
    "debug_files",
    "network_kind",
    "read_transport",
]

SCHEMA_VERSION = 2
"""2: ``fields`` (value, why, evidence per field), ``inter_node``, ``socket_fallback``,
``skipped``; ``unknown`` where the lines cannot tell. 1 (no ``schema_version``): the flat
values only, empty where unknown."""


@dataclass
class TransportReport:
    """The transport a run's NCCL output shows (``transport.json``, docs/transport.md)."""

    files: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)  # file, why not read
    fields: dict[str, Answer] = field(default_factory=dict)
    socket_inter_node: bool = False  # sockets carried traffic between nodes
    communicators: int = 0
    max_nodes: int = 0

    def value(self, name: str) -> str:
        """A field's value for the flat columns: empty when no NCCL output was read at
        all (a CPU run), else the value (``unknown`` included)."""
        return self.fields[name].value if self.files else ""

    def as_dict(self) -> dict[str, Any]:
        flat = {name: self.value(name) for name in FIELDS if name != "socket_fallback"}
        kinds = self.fields["net_transport"].value
        return {
            "schema_version": SCHEMA_VERSION,
            "files": self.files,
            "skipped": self.skipped,
            **flat,
            "socket_fallback": self.value("socket_fallback"),
            "socket_inter_node": self.socket_inter_node,
            "socket_any": "socket" in kinds,
            "inter_node_networks": _kinds(kinds) if self.value("inter_node") == "yes" else [],
            "communicators": self.communicators,
            "max_nodes": self.max_nodes,
            "fields": {name: asdict(answer) for name, answer in self.fields.items()},
            "evidence": [
                {"fact": name, **asdict(quote)}
                for name, answer in self.fields.items()
                for quote in answer.evidence
            ],
        }


def _kinds(value: str) -> list[str]:
    if value == UNKNOWN or not value:
        return []
    return value.removeprefix("mixed: ").split(", ")


def read_transport(
    paths: Iterable[str | os.PathLike[str]],
    *,
    nodes: int | None = None,
    fabric: str | None = None,
    base: Path | None = None,
    extractors: tuple[Extractor, ...] = EXTRACTORS,
) -> TransportReport:
    """The transport report of NCCL's output in ``paths`` (one process per file, or whole
    logs). ``nodes``: the run's node count where the caller knows it; ``fabric``: the
    site's network (``ib``, ``efa``, ``none``), which decides whether sockets between nodes
    are a fallback. File names in the report are relative to ``base`` where given."""
    facts = Facts()
    report = TransportReport()
    needles = plan(extractors)
    for path in sorted(Path(p) for p in paths):
        shown = str(path.relative_to(base)) if base is not None else str(path)
        why_not = refusal(path)
        if why_not is None:
            why_not = _read_file(path, shown, facts, needles)
        if why_not is None:
            report.files.append(shown)
        else:
            report.skipped.append({"file": shown, "why": why_not})
    network = decide.data_network(facts)
    inter = decide.inter_node(facts, nodes)
    report.fields = {
        "nccl_version": decide.nccl_version(facts),
        "inter_node": inter,
        "net_transport": decide.net_transport(facts, network),
        "gdr": decide.gdr(facts, network),
        "nvls": decide.nvls(facts),
        "collnet": decide.collnet(facts),
        "nccl_plugin": decide.nccl_plugin(facts, network),
        "socket_fallback": decide.socket_fallback(network, inter, fabric),
    }
    report.socket_inter_node = "socket" in network.kinds and inter.value == "yes"
    report.communicators = len({comm for comm, _ in facts.nodes.found()})
    report.max_nodes = max((n for _, n in facts.nodes.found()), default=0)
    return report


def _read_file(path: Path, shown: str, facts: Facts, needles: Plan) -> str | None:
    """File what ``path`` says into ``facts``; the reason when it cannot be read."""
    known: dict[str, set[str]] = {}
    try:
        for piece in pieces(path):
            for record in records(piece.text, path.name, known):
                extract(facts, Seen(record, shown, piece.number, piece.cut), needles)
    except OSError as err:
        return err.strerror or str(err)
    return None


def debug_files(attempt_dir: Path) -> list[Path]:
    """The attempt's NCCL debug files by name (``nccl-debug.<host>.<pid>.log``);
    ``read_transport`` reads the regular ones and says why it skipped the others."""
    try:
        return sorted(
            Path(entry.path) for entry in os.scandir(attempt_dir) if is_nccl_debug_file(entry.name)
        )
    except OSError:
        return []
