"""Each field of the transport report decided from the facts NCCL's lines gave
(``llmbench.parsers.transport_facts``), strongest evidence first, with why and the lines
that show it; ``unknown`` with the reason where the lines cannot tell (docs/transport.md).

The data network is read from what carried data first: the channel lines (``via NET/..``),
then the network a communicator was given (``Using network``), then what a process's
network transports reported at init. A bootstrap line is never the data network.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from llmbench.parsers.transport_facts import INTERNAL_NETWORKS, Facts, Quote

UNKNOWN = "unknown"
FIELDS = (
    "nccl_version",
    "inter_node",
    "net_transport",
    "gdr",
    "nvls",
    "collnet",
    "nccl_plugin",
    "socket_fallback",
)
"""The report's fields, in the order they are shown."""
MAX_QUOTES = 3
"""Lines quoted per field: enough to find the rest."""
NVLS_SINCE = (2, 17, 0)
"""NVLink SHARP first appears in NCCL 2.17.1 (NVIDIA/nccl tags): older NCCL has none."""
BOOTSTRAP_APART_SINCE = (2, 4, 8)
"""From NCCL 2.4.8 the bootstrap prints ``Bootstrap : Using``; before, every process
started the socket transport for it, so ``NET/Socket : Using`` named no data network."""
FABRICS_WITH_RDMA = ("ib", "efa")


@dataclass(frozen=True)
class Answer:
    """One field: its value, why, and the lines that show it."""

    value: str
    why: str
    evidence: tuple[Quote, ...] = ()


def network_kind(name: str) -> str:
    """``ib`` (IB verbs: InfiniBand or RoCE, NCCL's own or HPC-X's IBext), ``ofi``
    (aws-ofi-nccl: Libfabric, EFA), ``socket``, ``gib`` (Google's gIB), ``tcpx``
    (GPUDirect-TCPX), ``tcpxo`` (GPUDirect-TCPXO, FasTrak), else the name in lower case."""
    lowered = name.strip().lower()
    kinds = (
        ("ib", "ib"),
        ("gib", "gib"),
        ("gpudirecttcpx", "tcpx"),
        ("fastrak", "tcpxo"),
        ("socket", "socket"),
    )
    for prefix, kind in kinds:
        if lowered.startswith(prefix):
            return kind
    if "libfabric" in lowered or lowered in ("ofi", "aws-ofi", "efa"):
        return "ofi"
    return lowered


def _quotes(quotes: Iterable[Quote]) -> tuple[Quote, ...]:
    kept: list[Quote] = []
    for quote in quotes:
        if quote not in kept:
            kept.append(quote)
        if len(kept) == MAX_QUOTES:
            break
    return tuple(kept)


def _version_tuple(facts: Facts) -> tuple[int, ...]:
    """The version read, as numbers; (0,) when none was."""
    return tuple(int(p) for p in facts.version[0].split(".")) if facts.version else (0,)


@dataclass(frozen=True)
class DataNetwork:
    """The networks that carried (or were set up to carry) data, and how it is known."""

    names: tuple[str, ...]  # as NCCL printed them
    how: str
    evidence: tuple[Quote, ...]

    @property
    def kinds(self) -> list[str]:
        return sorted({network_kind(n) for n in self.names})


def data_network(facts: Facts) -> DataNetwork:
    procs = list(facts.processes.values())
    if any(p.channels for p in procs):
        names = [name for p in procs for name, _ in p.channels.found()]
        quotes = [q for p in procs for q in p.channels.quotes()]
        return DataNetwork(tuple(dict.fromkeys(names)), "channels via NET/", _quotes(quotes))
    if any(p.networks for p in procs):
        names = [name for p in procs for name in p.networks.found()]
        quotes = [q for p in procs for q in p.networks.quotes()]
        how = "the network given to the communicators"
        return DataNetwork(tuple(dict.fromkeys(names)), how, _quotes(quotes))
    apart = _version_tuple(facts) >= BOOTSTRAP_APART_SINCE
    init: list[tuple[str, Quote]] = []
    for p in procs:
        if p.ib_init:
            init.append(("IB", p.ib_init))
        elif p.socket_init and (p.ib_unavailable or apart):
            init.append(("Socket", p.socket_init))
    names = tuple(dict.fromkeys(name for name, _ in init))
    how = "the transports the processes started at init"
    return DataNetwork(names, how, _quotes(q for _, q in init))


def nccl_version(facts: Facts) -> Answer:
    if facts.version is None:
        return Answer(UNKNOWN, "no 'NCCL version' line")
    return Answer(facts.version[0], "NCCL version line", (facts.version[1],))


def inter_node(facts: Facts, nodes: int | None) -> Answer:
    spans = facts.nodes.found()
    if any(n > 1 for _, n in spans):
        most = max(n for _, n in spans)
        wide = [key for key in spans if key[1] > 1]
        why = f"a communicator spans {most} nodes (nNodes)"
        return Answer("yes", why, _quotes(facts.nodes.quotes(wide)))
    if spans:
        return Answer("no", "every communicator has nNodes 1", _quotes(facts.nodes.quotes()))
    procs = facts.processes.values()
    if any(p.channels for p in procs):
        quotes = [q for p in procs for q in p.channels.quotes()]
        return Answer("yes", "channels via NET/: data crossed the network", _quotes(quotes))
    for hosts, what in (
        (facts.hosts, "records come from"),
        (facts.test_hosts, "nccl-tests lists ranks on"),
    ):
        if len(hosts) > 1:
            shown = ", ".join(sorted(hosts.found())[:4])
            return Answer("yes", f"{what} {len(hosts)} hosts ({shown})", _quotes(hosts.quotes()))
    own = [a for a in facts.addresses.found() if not _loopback(a)]
    if len(own) > 1:
        shown = ", ".join(sorted(own)[:4])
        why = f"processes report {len(own)} own addresses ({shown})"
        return Answer("yes", why, _quotes(facts.addresses.quotes(own)))
    if facts.addresses and not own:
        why = "every process bootstraps over the loopback interface only"
        return Answer("no", why, _quotes(facts.addresses.quotes()))
    if nodes is not None:
        return Answer("yes" if nodes > 1 else "no", f"the run has {nodes} node(s) (given)")
    why = "no node count, network channel or second host in the lines, and no node count given"
    return Answer(UNKNOWN, why)


def _loopback(address: str) -> bool:
    return address.startswith("127.") or address == "::1"


def net_transport(facts: Facts, network: DataNetwork) -> Answer:
    kinds = network.kinds
    if not kinds:
        return Answer(UNKNOWN, "no channel, network or transport line names a data network")
    value = kinds[0] if len(kinds) == 1 else "mixed: " + ", ".join(kinds)
    why = f"{network.how}: {', '.join(network.names)}"
    cut = [(part, whole) for part, whole in facts.cut_names.found() if whole in network.names]
    if cut:
        why += "; " + ", ".join(f"'{p}' (its line is cut) read as {w}" for p, w in cut)
    return Answer(value, why, network.evidence)


def gdr(facts: Facts, network: DataNetwork) -> Answer:
    counts: dict[bool, int] = {}
    quotes: list[Quote] = []
    for p in facts.processes.values():
        for key in p.channels.found():
            counts[key[1]] = counts.get(key[1], 0) + p.channels.count(key)
            quotes += p.channels.quotes([key])
    for flag in facts.collnet_channels.found():
        counts[flag] = counts.get(flag, 0) + facts.collnet_channels.count(flag)
        quotes += facts.collnet_channels.quotes([flag])
    if counts:
        why = f"{counts.get(True, 0)} of {sum(counts.values())} network channels end /GDRDMA"
        return Answer(_on_off(set(counts)), why, _quotes(quotes))
    if facts.gdr_hca:
        why = "GPU Direct RDMA Enabled/Disabled for the HCAs"
        return Answer(_on_off(set(facts.gdr_hca.found())), why, _quotes(facts.gdr_hca.quotes()))
    if network.kinds == ["socket"]:
        return Answer("off", "sockets stage data through host memory", network.evidence)
    return Answer(UNKNOWN, "no network channel or GPU Direct RDMA line")


def _on_off(states: set[bool]) -> str:
    return "mixed" if len(states) == 2 else ("on" if True in states else "off")


def nvls(facts: Facts) -> Answer:
    if facts.nvls_heads:
        why = "NVLS comm ... nHeads: NCCL set up NVLink SHARP buffers"
        return Answer("on", why, _quotes(facts.nvls_heads.quotes()))
    if facts.nvls_channels:
        most = max(facts.nvls_channels.found())
        quotes = _quotes(facts.nvls_channels.quotes())
        return Answer("on" if most > 0 else "off", f"{most} nvls channels", quotes)
    if facts.nvls_support:
        available = True in facts.nvls_support.found()
        value = "available" if available else "off"
        why = "NVLS multicast support is " + ("available" if available else "not available")
        return Answer(value, why, _quotes(facts.nvls_support.quotes()))
    if facts.version is not None and _version_tuple(facts) < NVLS_SINCE:
        text, quote = facts.version
        return Answer("off", f"NCCL {text} predates NVLS (2.17)", (quote,))
    return Answer(UNKNOWN, "no NVLS line")


def collnet(facts: Facts) -> Answer:
    if facts.collnet_channels:
        return Answer("on", "channels via COLLNET/", _quotes(facts.collnet_channels.quotes()))
    if facts.collnet_plugins:
        why = f"collnet plugin {facts.collnet_plugins.found()[0]} loaded; no COLLNET channel"
        return Answer("plugin loaded", why, _quotes(facts.collnet_plugins.quotes()))
    return Answer(UNKNOWN, "no CollNet channel or plugin line")


def nccl_plugin(facts: Facts, network: DataNetwork) -> Answer:
    """What carried the data: NCCL's internal IB or Socket, an external plugin (named as
    NCCL printed its network), or a plugin that was loaded, loaded but unused, or failed."""
    external = [n for n in network.names if n not in INTERNAL_NETWORKS]
    if external:
        return Answer("external " + external[0], f"{network.how}: {external[0]}", network.evidence)
    loaded, loaded_quotes = _loaded(facts)
    if facts.plugins_failed:
        failed = facts.plugins_failed.found()[0]
        name = facts.plugins_loaded.found()[0] if facts.plugins_loaded else failed
        tail = f"; data over NCCL's {', '.join(network.names)}" if network.names else ""
        why = f"the plugin's init failed{tail}"
        return Answer(f"failed: {name}", why, _quotes(facts.plugins_failed.quotes()))
    if loaded and network.names:
        why = f"loaded, but {network.how} name NCCL's {', '.join(network.names)}"
        return Answer(
            f"loaded but unused: {loaded}", why, _quotes([*loaded_quotes, *network.evidence])
        )
    if loaded:
        why = "loaded; no line shows which network carried data"
        return Answer(f"loaded: {loaded}", why, _quotes(loaded_quotes))
    if network.names:
        names = " and ".join(network.names)
        return Answer(f"internal {names}", f"{network.how}: NCCL's own {names}", network.evidence)
    return Answer(UNKNOWN, "no plugin or network line")


def _loaded(facts: Facts) -> tuple[str, list[Quote]]:
    """The plugin that was loaded, by the name it gave, and the lines; "" when none."""
    if facts.hpcx_plugins:
        named = [n for n in facts.hpcx_plugins.found() if n]
        return (named[0] if named else "HPC-X plugin", facts.hpcx_plugins.quotes())
    if facts.plugins_loaded:
        return (facts.plugins_loaded.found()[0], facts.plugins_loaded.quotes())
    return ("", [])


def socket_fallback(network: DataNetwork, inter: Answer, fabric: str | None) -> Answer:
    sockets = "socket" in network.kinds
    if sockets and inter.value == "yes":
        if fabric in FABRICS_WITH_RDMA:
            why = f"sockets carried traffic between nodes on a site whose fabric is {fabric}"
            return Answer("yes", why, network.evidence + inter.evidence)
        if fabric is not None:
            return Answer("no", f"sockets between nodes, and the site's fabric is {fabric}")
        why = "sockets between nodes, but no site fabric given (--fabric)"
        return Answer(UNKNOWN, why, network.evidence)
    if inter.value == "no":
        return Answer("no", "no traffic crossed nodes")
    if network.kinds and not sockets:
        return Answer("no", f"the data network is {', '.join(network.kinds)}")
    if sockets:
        return Answer(UNKNOWN, "sockets, but whether traffic crossed nodes is not shown")
    return Answer(UNKNOWN, "the data network is not shown")
