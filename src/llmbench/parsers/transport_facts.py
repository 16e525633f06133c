"""What NCCL's debug lines say, gathered by a table of named extractors (docs/transport.md).

Each ``Extractor`` names one kind of NCCL line, the versions that print it (NVIDIA/nccl
``src/`` by tag) and the fact it files, with the line that shows it (a ``Quote``). The
extractors only collect; ``llmbench.parsers.transport_fields`` decides each field from
the facts. A line may feed several extractors; their order does not matter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from llmbench.parsers.nccl_records import Record

KNOWN_NETWORKS = (
    "IB",
    "IBext",
    "Socket",
    "Libfabric",
    "AWS Libfabric",
    "gIB",
    "GPUDirectTCPX",
    "FasTrak",
)
"""Network names NCCL and the plugins print: a name cut by a killed writer is read as the
one of these it begins, when it begins exactly one."""
INTERNAL_NETWORKS = ("IB", "Socket")
"""NCCL's own transports (``src/transport/net_ib``, ``net_socket``); every other network
name is a plugin's."""


MAX_QUOTES = 3
"""Lines kept per fact to quote: enough to find the rest."""
MAX_KEYS = 4096
"""Distinct keys kept per tally (hosts, addresses, plugin names ...): memory stays bounded
whatever a file holds; a real run has far fewer."""
MAX_PROCESSES = 100_000
"""Processes told apart; the records of any further ones count as one more process."""


@dataclass(frozen=True)
class Quote:
    """One line that shows a fact: the file, its line number, the record's text."""

    file: str
    line: int
    text: str


QUOTE_CHARS = 300
"""A quoted record is cut here: the start of a line is what identifies it."""


class Seen:
    """One record as an extractor sees it; its ``quote`` is made when first asked for."""

    __slots__ = ("_quote", "cut", "file", "line", "record")

    def __init__(self, record: Record, file: str, line: int, cut: bool) -> None:
        self.record, self.file, self.line, self.cut = record, file, line, cut
        self._quote: Quote | None = None

    @property
    def quote(self) -> Quote:
        if self._quote is None:
            self._quote = Quote(self.file, self.line, self.record.text[:QUOTE_CHARS])
        return self._quote


K = TypeVar("K", bound=Hashable)


class Tally(Generic[K]):
    """How often each key was seen, with the first lines that showed it (at most
    ``MAX_QUOTES`` per key and ``MAX_KEYS`` keys; further keys are only counted)."""

    def __init__(self) -> None:
        self._seen: dict[K, tuple[list[int], list[Quote]]] = {}
        self.dropped = 0

    def add(self, key: K, seen: Seen) -> None:
        entry = self._seen.get(key)
        if entry is None:
            if len(self._seen) >= MAX_KEYS:
                self.dropped += 1
                return
            entry = self._seen[key] = ([0], [])
        entry[0][0] += 1
        if len(entry[1]) < MAX_QUOTES:
            entry[1].append(seen.quote)

    def __bool__(self) -> bool:
        return bool(self._seen)

    def __len__(self) -> int:
        return len(self._seen)

    def found(self) -> list[K]:
        return list(self._seen)

    def count(self, key: K) -> int:
        return self._seen[key][0][0]

    def quotes(self, keys: Iterable[K] | None = None) -> list[Quote]:
        chosen = self._seen if keys is None else keys
        return [q for key in chosen for q in self._seen[key][1]]


@dataclass
class Process:
    """What one process's lines say about its network."""

    name: str
    networks: Tally[str] = field(default_factory=Tally)  # named for a communicator
    channels: Tally[tuple[str, bool]] = field(default_factory=Tally)  # network, /GDRDMA
    ib_init: Quote | None = None
    socket_init: Quote | None = None
    ib_unavailable: Quote | None = None


@dataclass
class Facts:
    """Everything the extractors filed, for all files read."""

    processes: dict[str, Process] = field(default_factory=dict)
    version: tuple[str, Quote] | None = None
    hosts: Tally[str] = field(default_factory=Tally)  # hosts of record prefixes
    test_hosts: Tally[str] = field(default_factory=Tally)  # nccl-tests' rank lines
    addresses: Tally[str] = field(default_factory=Tally)  # a process's own address
    nodes: Tally[tuple[str, int]] = field(default_factory=Tally)  # (comm, nNodes)
    collnet_channels: Tally[bool] = field(default_factory=Tally)  # /GDRDMA
    gdr_hca: Tally[bool] = field(default_factory=Tally)  # Enabled
    nvls_heads: Tally[int] = field(default_factory=Tally)
    nvls_channels: Tally[int] = field(default_factory=Tally)
    nvls_support: Tally[bool] = field(default_factory=Tally)  # available
    collnet_plugins: Tally[str] = field(default_factory=Tally)
    plugins_loaded: Tally[str] = field(default_factory=Tally)
    hpcx_plugins: Tally[str] = field(default_factory=Tally)
    plugins_failed: Tally[str] = field(default_factory=Tally)
    cut_names: Tally[tuple[str, str]] = field(default_factory=Tally)  # (as cut, read as)

    def process(self, name: str) -> Process:
        found = self.processes.get(name)
        if found is None:
            if len(self.processes) >= MAX_PROCESSES:
                name = "(further processes)"
            found = self.processes.setdefault(name, Process(name))
        return found


Take = Callable[[Facts, re.Match[str], Seen], None]


@dataclass(frozen=True)
class Extractor:
    """A named rule: the lines it reads (``pattern``, searched in a record's message when
    it holds one of ``needles``), what they say and which NCCL versions print them
    (``doc``), and the fact it files (``take``)."""

    name: str
    needles: tuple[str, ...]
    pattern: re.Pattern[str]
    take: Take
    doc: str


def _version(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    if facts.version is None:
        facts.version = (m.group(1), seen.quote)


def _network(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    name = m.group("name")
    if seen.cut and name not in KNOWN_NETWORKS:
        whole = [n for n in KNOWN_NETWORKS if n.startswith(name)]
        if len(whole) == 1 and len(name) >= 3:
            facts.cut_names.add((name, whole[0]), seen)
            name = whole[0]
    facts.process(seen.record.process).networks.add(name, seen)


def _channel(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    key = (m.group("name"), bool(m.group("gdr")))
    facts.process(seen.record.process).channels.add(key, seen)


def _collnet_channel(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    facts.collnet_channels.add(bool(m.group("gdr")), seen)


def _ib_init(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    proc = facts.process(seen.record.process)
    proc.ib_init = proc.ib_init or seen.quote


def _socket_init(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    proc = facts.process(seen.record.process)
    proc.socket_init = proc.socket_init or seen.quote


def _ib_unavailable(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    proc = facts.process(seen.record.process)
    proc.ib_unavailable = proc.ib_unavailable or seen.quote


def _address(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    facts.addresses.add(m.group("addr"), seen)


def _comm_nodes(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    facts.nodes.add((m.group("comm"), int(m.group("nodes"))), seen)


def _record_host(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    if seen.record.host:
        facts.hosts.add(seen.record.host, seen)


def _test_host(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    facts.test_hosts.add(m.group("host"), seen)


def _gdr_hca(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    facts.gdr_hca.add(m.group("state") == "Enabled", seen)


def _nvls_heads(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    if int(m.group("heads")) > 0:
        facts.nvls_heads.add(int(m.group("heads")), seen)


def _nvls_channels(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    facts.nvls_channels.add(int(m.group("n")), seen)


def _nvls_support(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    facts.nvls_support.add(m.group("not") is None and m.group("n") != "0", seen)


def _collnet_plugin(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    facts.collnet_plugins.add(m.group("name"), seen)


def _plugin_loaded(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    facts.plugins_loaded.add(m.group("name"), seen)


def _hpcx_plugin(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    facts.hpcx_plugins.add(m.group("name") or "", seen)


def _plugin_failed(facts: Facts, m: re.Match[str], seen: Seen) -> None:
    name = m.group("name") or "aws-ofi-nccl"
    if name not in INTERNAL_NETWORKS:
        facts.plugins_failed.add(name, seen)


_NAME = r"(?P<name>AWS Libfabric|[A-Za-z][\w.-]*)"
_ADDRESS = r"(?P<addr>[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9a-fA-F]*:[0-9a-fA-F:]+)(?:%\S+)?<\d+>"

EXTRACTORS: tuple[Extractor, ...] = (
    Extractor(
        "nccl_version",
        ("NCCL version",),
        re.compile(r"NCCL version (\d+\.\d+\.\d+)"),
        _version,
        "NCCL version x.y.z (all versions; a bare line up to 2.21)",
    ),
    Extractor(
        "using_network",
        ("Using network", "Assigned NET plugin"),
        re.compile(rf"(?:Using network |Assigned NET plugin ){_NAME}"),
        _network,
        "a communicator's network: Using network X (2.6+), Assigned NET plugin X to comm (2.27+)",
    ),
    Extractor(
        "internal_network",
        ("ternal Network",),
        re.compile(rf"Using (?:in|ex)ternal Network {_NAME}"),
        _network,
        "Using internal/external Network X (2.3)",
    ),
    Extractor(
        "channel_net",
        ("via NET/",),
        re.compile(r"via NET/(?P<name>[^/\n]{1,40}?)/\d+(?:\(\d+\))?(?P<gdr>/GDRDMA)?"),
        _channel,
        "Ring/Channel ... via NET/<network>/<dev>[/GDRDMA] (all): data that crossed the "
        "network, with GPUDirect RDMA where /GDRDMA follows",
    ),
    Extractor(
        "channel_collnet",
        ("via COLLNET/",),
        re.compile(r"via COLLNET/[^/\s]+/\d+(?P<gdr>/GDRDMA)?"),
        _collnet_channel,
        "Coll/CollNet ... via COLLNET/<plugin>/<dev>[/GDRDMA] (2.6+)",
    ),
    Extractor(
        "ib_init",
        ("NET/IB",),
        re.compile(r"NET/IB ?: ?Using \[\d+\]"),
        _ib_init,
        "NET/IB : Using [0]<dev> (2.4+): NCCL's IB transport found devices",
    ),
    Extractor(
        "socket_init",
        ("NET/Socket",),
        re.compile(r"NET/Socket ?: ?Using \[\d+\]"),
        _socket_init,
        "NET/Socket : Using [0]<if> (2.4+): the socket transport started; up to 2.4.7 "
        "every process prints it for its bootstrap",
    ),
    Extractor(
        "ib_unavailable",
        ("No device found", "libibverbs", "NCCL_IB_DISABLE"),
        re.compile(
            r"NET/IB ?: ?No device found|Failed to open libibverbs"
            r"|NCCL_IB_DISABLE set by environment to 1\b"
        ),
        _ib_unavailable,
        "NCCL's IB transport cannot run: no device, no libibverbs, NCCL_IB_DISABLE=1 (all)",
    ),
    Extractor(
        "interface_address",
        ("Using",),
        re.compile(
            r"(?:Bootstrap ?: ?Using (?:\[\d+\])?|NET/Socket ?: ?Using \[\d+\]"
            rf"|OOB |NET : Using interface )[\w.@-]+:{_ADDRESS}"
        ),
        _address,
        "a process's own address: Bootstrap : Using, NET/Socket : Using, the OOB of "
        "NET/IB : Using (2.4+), NET : Using interface (2.3)",
    ),
    Extractor(
        "comm_nodes",
        ("nNodes",),
        re.compile(r"\bcomm (?P<comm>0x[0-9a-fA-F]+) rank \d+ nRanks \d+ nNodes (?P<nodes>\d+)"),
        _comm_nodes,
        "comm <p> rank r nRanks n nNodes k (2.20+)",
    ),
    Extractor(
        "record_host",
        ("",),
        re.compile(r""),
        _record_host,
        "the host of each record's prefix: records from two hosts crossed nodes",
    ),
    Extractor(
        "nccl_tests_rank",
        ("Rank",),
        re.compile(r"^#\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?P<host>\S+)\s"),
        _test_host,
        "nccl-tests' header: # Rank r Group g Pid p on <host> device d",
    ),
    Extractor(
        "gdr_hca",
        ("GPU Direct RDMA",),
        re.compile(r"GPU Direct RDMA (?P<state>Enabled|Disabled) for HCA"),
        _gdr_hca,
        "NET/<net> : GPU Direct RDMA Enabled|Disabled for HCA n (2.12+, NET subsystem)",
    ),
    Extractor(
        "nvls_comm",
        ("NVLS comm",),
        re.compile(r"NVLS comm 0x[0-9a-fA-F]+ headRank -?\d+ nHeads (?P<heads>\d+)"),
        _nvls_heads,
        "NVLS comm <p> headRank h nHeads n (2.17+): NVLS buffers set up",
    ),
    Extractor(
        "nvls_channels",
        ("nvls channels",),
        re.compile(r"\b(?P<n>\d+) nvls channels"),
        _nvls_channels,
        "<n> coll channels, <n> nvls channels, ... (2.17+)",
    ),
    Extractor(
        "nvls_support",
        ("NVLS multicast support",),
        re.compile(
            r"NVLS multicast support is (?P<not>not )?available(?:.*NVLS_NCHANNELS (?P<n>\d+))?"
        ),
        _nvls_support,
        "NVLS multicast support is [not ]available on dev d [(NVLS_NCHANNELS n)] (2.17+)",
    ),
    Extractor(
        "collnet_plugin",
        ("Loaded coll",),
        re.compile(r"Loaded coll(?:net)? plugin (?P<name>.+?)(?: \(v\d+\))?\s*$"),
        _collnet_plugin,
        "NET/Plugin: Loaded coll[net] plugin X (vN) (2.12+)",
    ),
    Extractor(
        "plugin_loaded",
        ("Loaded net plugin",),
        re.compile(r"Loaded net plugin (?P<name>.+?)(?: \(v\d+\))?\s*$"),
        _plugin_loaded,
        "NET/Plugin: Loaded net plugin X (vN) (2.12+)",
    ),
    Extractor(
        "hpcx_plugin",
        ("P2P plugin", "Plugin Path"),
        re.compile(r"P2P plugin (?:v\d+ )?(?P<name>IBext\S*)|Plugin Path : \S+"),
        _hpcx_plugin,
        "HPC-X's plugin (nccl_rdma_sharp_plugin): Plugin Path : ..., P2P plugin IBext[_vN]",
    ),
    Extractor(
        "plugin_failed",
        ("aws-ofi-nccl initialization failed", "Failed to initialize NET plugin"),
        re.compile(
            r"NET/OFI aws-ofi-nccl initialization failed"
            r"|Failed to initialize NET plugin (?P<name>\S+)"
        ),
        _plugin_failed,
        "a plugin's init failed: NET/OFI aws-ofi-nccl initialization failed, Failed to "
        "initialize NET plugin X (2.23+)",
    ),
)
"""Every rule of the reader, by name (tests/parsers/test_transport_corpus.py drops each in
turn and checks that some real log then reads differently)."""


Plan = tuple[tuple[str, tuple[Extractor, ...]], ...]
"""Each needle of a set of extractors with the extractors it wakes, in table order."""


def plan(extractors: tuple[Extractor, ...]) -> Plan:
    """The needles of ``extractors`` (made once per read, not once per record)."""
    needles = dict.fromkeys(n for e in extractors for n in e.needles)
    return tuple((n, tuple(e for e in extractors if n in e.needles)) for n in needles)


def extract(facts: Facts, seen: Seen, needles: Plan) -> None:
    """File what ``seen`` says under every extractor whose needle it holds and whose
    pattern it matches."""
    message = seen.record.message
    woken = [waking for needle, waking in needles if needle in message]
    chosen = woken[0] if len(woken) == 1 else dict.fromkeys(e for w in woken for e in w)
    for extractor in chosen:
        m = extractor.pattern.search(message)
        if m is not None:
            extractor.take(facts, m, seen)
