"""The transport evidence of ``llmbench explain``: what NCCL's debug output
(``transport.json``, either layout, docs/transport.md) says against a run: inter-node
traffic over TCP sockets, a network plugin that failed or went unused, no GPUDirect RDMA
between nodes."""

from __future__ import annotations

from llmbench.aggregate.explanation import Item, RunFacts, row_value
from llmbench.core.run_folder import TRANSPORT

SOCKET_FALLBACK_EFFECT = (20.0, 25.0)
SOCKET_FALLBACK_SOURCE = (
    "NVIDIA/exemplar-performance PR #39 (https://github.com/NVIDIA/exemplar-performance/pull/39): "
    "~23 % slower training when the EFA network plugin did not load and NCCL fell back to "
    "sockets (NeMo 25.11.01, NCCL 2.29, P5en); its troubleshooting guide: 'Throughput is "
    "~20-25% lower than expected'. A stated figure, no measurement table published"
)
GDR_SOURCE = (
    "no training figure published; nccl-tests all-reduce bus bandwidth about half without "
    "GPUDirect RDMA (https://github.com/NVIDIA/nccl/issues/214)"
)
_V1_FACTS = {
    "socket": ("network Socket", "net plugin failed", "channel via NET/Socket",
               "communicator spans nodes"),
    "plugin": ("net plugin failed",),
    "gdr": ("GPU Direct RDMA Disabled", "GDR 0"),
}  # fmt: skip
"""The evidence facts of the first transport.json layout, per kind of item."""
_V2_FIELDS = {
    "socket": ("socket_fallback", "net_transport", "inter_node"),
    "plugin": ("nccl_plugin",),
    "gdr": ("gdr",),
}
"""The fields whose quoted lines show each kind of item (schema 2)."""


def _lines(facts: RunFacts, kind: str) -> list[str]:
    """``runs/<run>/<file>:<line>`` of the transport evidence for one kind of item, from
    either layout of transport.json (docs/transport.md)."""
    data = facts.transport
    fields = data.get("fields")
    if isinstance(fields, dict):
        quotes = [
            q for name in _V2_FIELDS[kind] for q in (fields.get(name) or {}).get("evidence", [])
        ]
    else:
        quotes = [e for e in data.get("evidence", []) if e.get("fact") in _V1_FACTS[kind]]
    shown = [f"runs/{facts.run_id}/{q.get('file')}:{q.get('line')}" for q in quotes]
    return list(dict.fromkeys(shown))


def transport(facts: RunFacts) -> tuple[list[Item], str]:
    if "record" in facts.unread:
        return [], f"transport: not checked: {facts.unread['record']}"
    data = facts.transport
    files = list(data.get("files") or [])
    source = facts.path(TRANSPORT)
    if "transport" in facts.unread:
        source = f"{facts.unread['transport']}; the attempt's debug files read instead"
    checked = f"transport: NCCL's debug output, {len(files)} file(s) ({source})"
    if not files:
        return [], checked + ": none (a CPU run, or NCCL wrote no debug file)"
    items = []
    plugin = str(data.get("nccl_plugin") or "")
    if data.get("socket_inter_node"):
        fallback = bool(row_value(facts.row, "socket_fallback"))
        where = (
            "on a cluster with IB/EFA" if fallback else "(the site declares no IB or EFA fabric)"
        )
        detail = (
            f"NCCL used TCP sockets between nodes {where}; network plugin: {plugin or 'none named'}"
        )
        items.append(
            Item(
                "transport",
                "inter-node traffic over TCP sockets",
                detail,
                SOCKET_FALLBACK_EFFECT if fallback else None,
                SOCKET_FALLBACK_SOURCE if fallback else "",
                tuple(_lines(facts, "socket")[:4] or files[:2]),
            )
        )
    elif plugin.startswith(("failed", "loaded but unused")):
        title = "network plugin failed" if plugin.startswith("failed") else "network plugin unused"
        evidence = tuple(_lines(facts, "plugin")[:2] or files[:1])
        items.append(Item("transport", title, plugin, evidence=evidence))
    inter_node = (
        data.get("inter_node") == "yes"
        or bool(data.get("inter_node_networks"))
        or int(facts.row.get("nodes") or 1) > 1
    )
    if data.get("gdr") == "off" and inter_node and not data.get("socket_inter_node"):
        items.append(
            Item(
                "transport",
                "no GPUDirect RDMA between nodes",
                f"network {data.get('net_transport')}: data crosses host memory",
                None,
                GDR_SOURCE,
                tuple(_lines(facts, "gdr")[:2] or files[:1]),
            )
        )
    return items, checked
