"""What NCCL says about the transport it used: its INIT/NET debug output, read per
communicator (docs/transport.md).

A GPU launch runs with ``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET`` and
``NCCL_DEBUG_FILE=<attempt>/nccl-debug.%h.%p.log``: one file per process, which NCCL
opens with mode "w" (``%h`` host, ``%p`` pid). A record is
``<host>:<pid>:<tid> [<cudaDev>] NCCL INFO <message>`` (``... <file>.cc:<line> NCCL WARN
...`` for warnings); wrappers put their own text in front (``[1,0]<stdout>:``, a time
stamp, ``[rank0]:``) and a post may glue two records on one line, so records are found by
that pattern anywhere in a line. Lines without it (the bare ``NCCL version`` of NCCL up
to 2.21, a poster's stripped lines) belong to the file's process.

The lines read, with the NCCL versions that print them (NVIDIA/nccl ``src/``, by tag):

- ``Using network <name>`` (all): the network plugin of the communicator whose ``Init
  START`` the same thread prints next; names ``IB``, ``IBext``/``IBext_v<N>`` (HPC-X's
  plugin, IB verbs), ``Libfabric``/``AWS Libfabric`` (aws-ofi-nccl, EFA), ``Socket``;
- ``comm 0x<p> rank <r> nRanks <n> nNodes <k> ...`` (2.20+): the nodes a communicator
  spans; ``... via NET/<name>/<dev>[/GDRDMA]`` channel lines (all; after ``Init
  COMPLETE`` from 2.22, which connects at first use): traffic that crossed the network,
  with GPUDirect RDMA where ``/GDRDMA`` follows;
- ``GPU Direct RDMA Enabled|Disabled for HCA`` (NET subsystem) and ``use ring PXN <x> GDR
  <y>`` (2.24+): GPUDirect RDMA;
- ``<n> nvls channels`` and ``NVLS multicast support is [not ]available ... (NVLS_NCHANNELS
  <n>)`` (2.27+): NVLink SHARP; ``CollNet ... via COLLNET/`` and ``Loaded collnet plugin``:
  CollNet (SHARP in the switches). The ``<n> collnet channels`` count of 2.21+ repeats the
  coll channel count and says nothing about CollNet;
- the network plugin: ``Loaded net plugin <name> (v<N>)``, ``Plugin Path :`` (HPC-X),
  ``NET/OFI Initializing aws-ofi-nccl <version>`` loaded; ``NET/OFI aws-ofi-nccl
  initialization failed``, ``Failed to initialize NET plugin <name>``, ``Could not find:``,
  ``Plugin load ... returned``, ``No plugin found`` failed or absent (NCCL then uses its
  internal IB or Socket transport).

Inter-node traffic went over sockets when a communicator used ``Socket`` and spans
nodes (``nNodes`` above 1, or channels ``via NET/Socket``); a run that spans nodes says so
for older NCCL without those lines (``inter_node`` given by the caller).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llmbench.launch.nccl_debug import DEBUG_FILE_PREFIX

MAX_EVIDENCE = 3
"""Lines kept per fact as evidence (file and line number): enough to find the rest."""
MAX_LINE_BYTES = 4096
"""An NCCL record is short; a longer line (a tensor dump, a progress bar) is cut here."""

_RECORD = re.compile(
    r"([A-Za-z0-9][A-Za-z0-9._-]*):(\d+):(\d+) \[(\d+)\] (?:\S+ )?NCCL (INFO|WARN) "
)
_NETWORK = re.compile(r"Using network (.+?)\s*$")
_COMM = re.compile(r"\bcomm (0x[0-9a-fA-F]+) rank (\d+) nRanks (\d+) nNodes (\d+)")
_INIT = re.compile(r"\bcomm (0x[0-9a-fA-F]+) rank (\d+) nranks (\d+)\b.*- Init (START|COMPLETE)")
_CHANNEL_NET = re.compile(r"\bvia NET/([^/\s]+(?: [^/\s]+)*)/\d+(?:\(\d+\))?(/GDRDMA)?")
_GDR_HCA = re.compile(r"GPU Direct RDMA (Enabled|Disabled) for HCA")
_GDR_RING = re.compile(r"use ring PXN \d+ GDR (\d)")
_NVLS_CHANNELS = re.compile(r"\b(\d+) nvls channels")
_NVLS_SUPPORT = re.compile(r"NVLS multicast support is (not )?available(?:.*NVLS_NCHANNELS (\d+))?")
_COLLNET_CHANNEL = re.compile(r"\bvia COLLNET/")
_COLLNET_PLUGIN = re.compile(r"Loaded collnet plugin (.+?)\s*$")
_PLUGIN_LOADED = re.compile(r"Loaded net plugin (.+?)\s*$")
_PLUGIN_PATH = re.compile(r"Plugin Path : (\S+)")
_OFI_INIT = re.compile(r"NET/OFI (?:Initializing|Using) aws-ofi-nccl (\S+)")
_OFI_LINE = re.compile(r"\bNET/OFI ")
_SOCKET_INIT = re.compile(r"NET/Socket ?: ?Using \[")
_PLUGIN_FAILED = re.compile(
    r"NET/OFI aws-ofi-nccl initialization failed|Failed to initialize any NET plugin"
    r"|Failed to initialize NET plugin (?!IB\b|Socket\b)(\S+)"
)
_INTERNAL_FAILED = re.compile(
    r"Failed to initialize NET plugin (IB|Socket)\b|NET/IB : No device found"
)
_PLUGIN_NOT_FOUND = re.compile(r"NET/Plugin ?: ?Could not find: ([^.]+(?:\.so)?)")
_PLUGIN_ABSENT = re.compile(
    r"NET/Plugin ?: ?(?:Plugin load .*returned|No plugin found|Using internal)"
)
DEFAULT_PLUGIN = "libnccl-net.so"
"""The plugin NCCL looks for when ``NCCL_NET_PLUGIN`` is unset: its absence is normal."""
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")

NETWORKS = {"ib": "IB verbs", "ofi": "OFI (aws-ofi-nccl, EFA)", "socket": "TCP sockets"}
"""Values of ``net_transport`` and what they mean."""


def network_kind(name: str) -> str:
    """``ib``, ``ofi``, ``socket``, or the name NCCL printed, lower case."""
    lowered = name.strip().lower()
    if lowered.startswith("ib"):  # IB, IBext, IBext_v8: verbs (InfiniBand or RoCE)
        return "ib"
    if "libfabric" in lowered or lowered in ("ofi", "aws-ofi", "efa"):
        return "ofi"
    if lowered.startswith("socket"):
        return "socket"
    return lowered


@dataclass
class Evidence:
    """One line that shows a fact, where it is."""

    fact: str
    file: str
    line: int
    text: str


@dataclass
class Communicator:
    """One communicator of one process, as far as its lines tell."""

    process: str  # host:pid (or the file's name where lines carry no prefix)
    comm: str = ""
    rank: int | None = None
    nranks: int | None = None
    nodes: int | None = None
    network: str = ""
    net_channels: set[str] = field(default_factory=set)  # network kinds of NET channels
    gdr_channels: set[bool] = field(default_factory=set)  # /GDRDMA seen on NET channels
    gdr_ring: int | None = None
    nvls_channels: int | None = None
    collnet: bool = False

    @property
    def inter_node(self) -> bool:
        return bool(self.net_channels) or (self.nodes or 0) > 1


@dataclass
class _Process:
    name: str
    pending_network: dict[str, str] = field(default_factory=dict)  # tid -> network
    comms: dict[str, Communicator] = field(default_factory=dict)  # comm pointer -> comm
    last_comm: dict[str, Communicator] = field(default_factory=dict)  # tid -> comm
    current: Communicator | None = None
    socket_init: bool = False  # NCCL's socket transport started (NCCL tried it last)

    def comm(self, pointer: str) -> Communicator:
        if pointer not in self.comms:
            self.comms[pointer] = Communicator(self.name, comm=pointer)
        return self.comms[pointer]

    def for_thread(self, tid: str) -> Communicator:
        """The communicator a line without a pointer belongs to: the thread's last, else
        the process's last, else one without a pointer."""
        comm = self.last_comm.get(tid) or self.current
        if comm is None:
            comm = self.comm("")
            self.current = comm
        return comm


@dataclass
class TransportReport:
    """The transport a run's NCCL output shows (``transport.json``, docs/transport.md)."""

    files: list[str] = field(default_factory=list)
    nccl_version: str = ""
    net_transport: str = ""  # ib | ofi | socket | mixed: a, b | "" (no NCCL output)
    gdr: str = ""  # on | off | mixed | ""
    nvls: str = ""  # on | off | available | ""
    collnet: str = ""  # on | plugin loaded | ""
    nccl_plugin: str = ""  # <name> | failed: <what> | internal | ""
    communicators: int = 0
    inter_node_networks: list[str] = field(default_factory=list)
    socket_inter_node: bool = False  # a communicator spanning nodes used sockets
    socket_any: bool = False  # some communicator's network was Socket
    max_nodes: int = 0
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Reader:
    def __init__(self) -> None:
        self.processes: dict[str, _Process] = {}
        self.version = ""
        self.plugins_loaded: list[str] = []
        self.plugins_failed: list[str] = []
        self.plugin_absent = False
        self.collnet_plugin = ""
        self.ofi_seen = False
        self.gdr_hca: set[bool] = set()
        self.nvls_support: set[bool] = set()
        self.evidence: dict[str, list[Evidence]] = {}

    def note(self, fact: str, where: str, number: int, text: str) -> None:
        kept = self.evidence.setdefault(fact, [])
        if len(kept) < MAX_EVIDENCE:
            kept.append(Evidence(fact, where, number, text.strip()[:300]))

    def process(self, name: str) -> _Process:
        if name not in self.processes:
            self.processes[name] = _Process(name)
        return self.processes[name]

    def read_line(self, line: str, default: str, where: str, number: int) -> None:
        starts = [m for m in _RECORD.finditer(line)]
        if not starts:
            self.record(default, "", line, where, number)
            return
        for i, match in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(line)
            name = f"{match.group(1)}:{match.group(2)}"
            self.record(name, match.group(3), line[match.end() : end], where, number)

    def record(self, name: str, tid: str, message: str, where: str, number: int) -> None:
        proc = self.process(name)
        if (m := _VERSION.search(message)) and not self.version:
            self.version = m.group(1)
            self.note("NCCL version", where, number, message)
        if m := _NETWORK.search(message):
            proc.pending_network[tid] = m.group(1)
            self.note(f"network {m.group(1)}", where, number, message)
            comm = proc.last_comm.get(tid)
            if comm is not None and not comm.network:
                comm.network = m.group(1)
            return
        if m := _INIT.search(message):
            comm = proc.comm(m.group(1))
            comm.rank, comm.nranks = int(m.group(2)), int(m.group(3))
            if m.group(4) == "START" or not comm.network:
                comm.network = proc.pending_network.pop(tid, comm.network)
            proc.last_comm[tid] = proc.current = comm
            return
        if m := _COMM.search(message):
            comm = proc.comm(m.group(1))
            comm.rank, comm.nranks, comm.nodes = int(m.group(2)), int(m.group(3)), int(m.group(4))
            if not comm.network and tid in proc.pending_network:
                comm.network = proc.pending_network[tid]
            proc.last_comm[tid] = proc.current = comm
            if comm.nodes > 1:
                self.note("communicator spans nodes", where, number, message)
            return
        if m := _CHANNEL_NET.search(message):
            comm = proc.for_thread(tid)
            kind = network_kind(m.group(1))
            comm.net_channels.add(kind)
            comm.gdr_channels.add(bool(m.group(2)))
            self.note(f"channel via NET/{m.group(1)}", where, number, message)
            if comm.network == "" and tid in proc.pending_network:
                comm.network = proc.pending_network[tid]
            return
        if m := _GDR_RING.search(message):
            proc.for_thread(tid).gdr_ring = int(m.group(1))
            self.note(f"GDR {m.group(1)}", where, number, message)
            return
        if m := _GDR_HCA.search(message):
            self.gdr_hca.add(m.group(1) == "Enabled")
            self.note(f"GPU Direct RDMA {m.group(1)}", where, number, message)
            return
        if m := _NVLS_CHANNELS.search(message):
            proc.for_thread(tid).nvls_channels = int(m.group(1))
            return
        if m := _NVLS_SUPPORT.search(message):
            available = m.group(1) is None and (m.group(2) is None or int(m.group(2)) > 0)
            self.nvls_support.add(available)
            self.note(
                "NVLS " + ("available" if available else "not available"), where, number, message
            )
            return
        if _COLLNET_CHANNEL.search(message):
            proc.for_thread(tid).collnet = True
            self.note("CollNet channel", where, number, message)
            return
        if m := _COLLNET_PLUGIN.search(message):
            self.collnet_plugin = m.group(1)
            return
        if m := _PLUGIN_LOADED.search(message):
            self.plugins_loaded.append(m.group(1))
            self.note("net plugin loaded", where, number, message)
            return
        if m := _OFI_INIT.search(message):
            if not self.plugins_loaded:
                self.plugins_loaded.append(f"aws-ofi-nccl {m.group(1)}")
            return
        if _SOCKET_INIT.search(message):
            proc.socket_init = True
            self.note("socket transport started", where, number, message)
            return
        if _OFI_LINE.search(message) and "fail" not in message.lower():
            self.ofi_seen = True
        if m := _PLUGIN_PATH.search(message):
            if not self.plugins_loaded:
                self.plugins_loaded.append(Path(m.group(1)).name)
            return
        if m := _PLUGIN_FAILED.search(message):
            self.plugins_failed.append(m.group(1) or m.group(0))
            self.note("net plugin failed", where, number, message)
            return
        if m := _PLUGIN_NOT_FOUND.search(message):
            names = m.group(1).split()
            if names == [DEFAULT_PLUGIN]:
                self.plugin_absent = True
                self.note("no external net plugin", where, number, message)
            else:  # NCCL_NET_PLUGIN named one that is not there
                self.plugins_failed.append(f"not found: {' '.join(names)}")
                self.note("net plugin failed", where, number, message)
            return
        if _INTERNAL_FAILED.search(message):
            self.note("internal IB transport unavailable", where, number, message)
            return
        if _PLUGIN_ABSENT.search(message):
            self.plugin_absent = True
            self.note("no external net plugin", where, number, message)

    def communicators(self) -> list[Communicator]:
        """Every communicator; a network named without a communicator's ``Init START``
        after it (excerpts, NCCL before 2.18) counts as one of its process, and so does
        the socket transport a process started without naming a network."""
        comms = []
        for proc in self.processes.values():
            comms += proc.comms.values()
            named = {c.network for c in proc.comms.values() if c.network}
            for network in set(proc.pending_network.values()) - named:
                comms.append(Communicator(proc.name, network=network))
            if proc.socket_init and not named and not proc.pending_network:
                comms.append(Communicator(proc.name, network="Socket"))
        return comms

    def report(self, files: list[str], inter_node: bool) -> TransportReport:
        comms = self.communicators()
        networks = {network_kind(c.network) for c in comms if c.network}
        spanning = [c for c in comms if c.inter_node or (inter_node and c.network)]
        inter = sorted(
            {network_kind(c.network) for c in spanning if c.network}
            | {k for c in spanning for k in c.net_channels}
        )
        shown = inter or sorted(networks)
        gdr_seen = {g for c in comms for g in c.gdr_channels}
        gdr_seen |= {c.gdr_ring == 1 for c in comms if c.gdr_ring is not None}
        gdr_seen |= self.gdr_hca
        nvls_counts = [c.nvls_channels for c in comms if c.nvls_channels is not None]
        socket_spanning = any(
            network_kind(c.network) == "socket" or "socket" in c.net_channels for c in spanning
        )
        return TransportReport(
            files=files,
            nccl_version=self.version,
            net_transport=_one_or_mixed(shown),
            gdr=_on_off(gdr_seen),
            nvls=_nvls(nvls_counts, self.nvls_support),
            collnet=(
                "on"
                if any(c.collnet for c in comms)
                else ("plugin loaded" if self.collnet_plugin else "")
            ),
            nccl_plugin=self._plugin(networks),
            communicators=len([c for c in comms if c.comm]),
            inter_node_networks=inter,
            socket_inter_node=socket_spanning,
            socket_any="socket" in networks,
            max_nodes=max((c.nodes or 0 for c in comms), default=0),
            evidence=[asdict(e) for kept in self.evidence.values() for e in kept],
        )

    def _plugin(self, networks: set[str]) -> str:
        if self.plugins_failed:
            return "failed: " + " - ".join([*self.plugins_loaded[:1], self.plugins_failed[0]])
        if self.plugins_loaded:
            return self.plugins_loaded[0]
        if self.ofi_seen or "ofi" in networks:
            return "aws-ofi-nccl"
        if self.plugin_absent or networks:
            return "internal"
        return ""


def _one_or_mixed(kinds: list[str]) -> str:
    if not kinds:
        return ""
    return kinds[0] if len(kinds) == 1 else "mixed: " + ", ".join(kinds)


def _on_off(seen: set[bool]) -> str:
    if not seen:
        return ""
    if len(seen) == 2:
        return "mixed"
    return "on" if True in seen else "off"


def _nvls(counts: list[int], support: set[bool]) -> str:
    if any(n > 0 for n in counts):
        return "on"
    if counts or support == {False}:
        return "off"
    return "available" if True in support else ""


def _lines(path: Path) -> Iterator[str]:
    with open(path, "rb") as fh:
        for raw in fh:
            yield raw[:MAX_LINE_BYTES].decode("utf-8", errors="replace").rstrip("\r\n")


def read_transport(
    paths: Iterable[str | os.PathLike[str]], inter_node: bool = False, base: Path | None = None
) -> TransportReport:
    """The transport report of NCCL's output in ``paths`` (one process per file, or a
    whole log). ``inter_node``: the run spans nodes, so a communicator that used a network
    carried inter-node traffic even where NCCL prints no node count. File names in the
    report are relative to ``base`` where given."""
    reader = _Reader()
    names = []
    for path in sorted(Path(p) for p in paths):
        shown = str(path.relative_to(base)) if base is not None else str(path)
        names.append(shown)
        try:
            for number, line in enumerate(_lines(path), start=1):
                reader.read_line(line, path.name, shown, number)
        except OSError:
            continue
    return reader.report(names, inter_node)


def debug_files(attempt_dir: Path) -> list[Path]:
    """The attempt's NCCL debug files (``nccl-debug.<host>.<pid>.log``)."""
    try:
        return sorted(
            Path(entry.path)
            for entry in os.scandir(attempt_dir)
            if entry.name.startswith(DEBUG_FILE_PREFIX) and entry.name.endswith(".log")
        )
    except OSError:
        return []
