"""Why a run missed its reference: the evidence llmbench already holds about it, ranked by
how much of the step time each item could explain (docs/explain.md).

One function per kind of evidence, each given the run's ``RunFacts`` and returning
``(items, what it checked)``:

- ``transport``: NCCL's debug output (``transport.json``): inter-node traffic over TCP
  sockets, a network plugin that failed, no GPUDirect RDMA between nodes;
- ``node_health``: the preflight nodes table for the run's nodes: an excluded node, a
  warning (Xid, CPU governor ...), bandwidth below the expected figure;
- ``telemetry``: the window's energy figures (``energy.json``): SM clocks that fell
  below 90 % of the GPU's highest clock in the run;
- ``step_spread``: the window's step times (``steps.parquet``): slow steps, and other
  processes of the sweep on the run's host (``overlap``);
- ``launch``: the run's launch against the reference's (``run_spec.json``'s parity
  data): deliberate differences, an image or a framework install that is not the
  reference's, no reference settings at all;
- ``reference_row``: the run against the published row it is compared with (GBS, GPU
  count).

Items with a number (``effect_pct``, a low-high range in percent of the step time, with
its source) come first, largest first; the others follow in the order above.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from llmbench.job.run_record import read_record, read_run_transport
from llmbench.launch.slurm import expand_nodelist
from llmbench.spec.catalog import published_results
from llmbench.telemetry.energy import THROTTLE_FRACTION
from llmbench.text import counted, effect_words

EXPLAINED_VERDICTS = ("slower", "no_reference", "not_comparable", None)
"""Verdicts whose runs get an explanation in the report (None: no verdict at all)."""
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
CLOCK_SOURCE = (
    "upper bound: a step's GPU time scales at most with its SM clock, and every rank waits "
    "for the slowest GPU (a memory- or network-bound step loses less)"
)
SPREAD_LIMIT = 0.05
"""Step-time std / mean in the window above which the spread is listed."""
ORDER = ("transport", "node_health", "telemetry", "step_spread", "launch", "reference_row")


@dataclass(frozen=True)
class Item:
    """One piece of evidence: what, how much it could explain (percent of the step time,
    low-high, None where no number exists) and where it is (paths under results/)."""

    kind: str
    title: str
    detail: str
    effect_pct: tuple[float, float] | None = None
    effect_source: str = ""
    evidence: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["effect_pct"] = (
            None
            if self.effect_pct is None
            else {"low": self.effect_pct[0], "high": self.effect_pct[1]}
        )
        out["evidence"] = list(self.evidence)
        return out


@dataclass
class RunFacts:
    """What the evidence functions read about one run."""

    row: Mapping[str, Any]  # its runs-table row
    results: Path  # the results/ folder
    record: Mapping[str, Any] = field(default_factory=dict)
    transport: Mapping[str, Any] = field(default_factory=dict)
    nodes: pd.DataFrame | None = None  # the preflight nodes table, where preflight ran
    steps: pd.DataFrame | None = None  # the run's rows of the steps table

    @property
    def run_id(self) -> str:
        return str(self.row["run_id"])

    @property
    def run_dir(self) -> Path:
        return self.results / "runs" / self.run_id

    def path(self, name: str) -> str:
        """A file of the run, relative to results/."""
        return f"runs/{self.run_id}/{name}"


@dataclass
class Explanation:
    run_id: str
    verdict: str | None
    verdict_reason: str | None
    deviation_pct: float | None
    items: list[Item]
    checked: list[str]

    @property
    def summary(self) -> str:
        if not self.items:
            return "no known cause found"
        return f"{counted(len(self.items), 'known cause')}; first: {self.items[0].title}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "verdict": self.verdict,
            "verdict_reason": self.verdict_reason,
            "deviation_pct": self.deviation_pct,
            "summary": self.summary,
            "items": [i.as_dict() for i in self.items],
            "checked": list(self.checked),
        }


def _value(row: Mapping[str, Any], name: str) -> Any:
    value = row.get(name)
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


# --- one function per kind of evidence ----------------------------------------------------


def transport(facts: RunFacts) -> tuple[list[Item], str]:
    data = facts.transport
    files = list(data.get("files") or [])
    checked = (
        f"transport: NCCL's debug output, {len(files)} file(s) ({facts.path('transport.json')})"
    )
    if not files:
        return [], checked + ": none (a CPU run, or NCCL wrote no debug file)"
    lines = [
        f"runs/{facts.run_id}/{e['file']}:{e['line']}"
        for e in data.get("evidence", [])
        if e["fact"]
        in (
            "network Socket",
            "net plugin failed",
            "channel via NET/Socket",
            "communicator spans nodes",
        )
    ]
    items = []
    plugin = str(data.get("nccl_plugin") or "")
    if data.get("socket_inter_node"):
        fallback = bool(_value(facts.row, "socket_fallback"))
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
                tuple(lines[:4] or files[:2]),
            )
        )
    elif plugin.startswith("failed"):
        items.append(
            Item(
                "transport", "network plugin failed", plugin, evidence=tuple(lines[:2] or files[:1])
            )
        )
    inter_node = data.get("inter_node_networks") or int(facts.row.get("nodes") or 1) > 1
    if data.get("gdr") == "off" and inter_node and not data.get("socket_inter_node"):
        gdr_lines = [
            f"runs/{facts.run_id}/{e['file']}:{e['line']}"
            for e in data.get("evidence", [])
            if e["fact"] in ("GPU Direct RDMA Disabled", "GDR 0")
        ]
        items.append(
            Item(
                "transport",
                "no GPUDirect RDMA between nodes",
                f"network {data.get('net_transport')}: data crosses host memory",
                None,
                GDR_SOURCE,
                tuple(gdr_lines[:2] or files[:1]),
            )
        )
    return items, checked


def node_health(facts: RunFacts) -> tuple[list[Item], str]:
    nodes = expand_nodelist(_value(facts.row, "nodelist")) or [str(facts.row.get("host") or "")]
    table = facts.nodes
    if table is None or table.empty:
        return [], "node health: no preflight nodes table (preflight off)"
    mine = table[table["node"].isin(nodes)]
    checked = (
        f"node health: preflight of {len(mine)} of the run's {len(nodes)} node(s) "
        "(tables/nodes.parquet)"
    )
    items = []
    for row in mine.to_dict("records"):
        if row["status"] != "ok":
            items.append(
                Item(
                    "node_health",
                    f"node {row['node']} failed preflight",
                    row["reason"],
                    evidence=("tables/nodes.parquet", "tables/nodes.html"),
                )
            )
        if row.get("warnings"):
            items.append(
                Item(
                    "node_health",
                    f"node {row['node']} preflight warnings",
                    row["warnings"],
                    evidence=("tables/nodes.parquet",),
                )
            )
    return items, checked


def telemetry(facts: RunFacts) -> tuple[list[Item], str]:
    energy_file = facts.path("energy.json")
    checked = f"telemetry: SM clocks in the step window ({energy_file})"
    if _value(facts.row, "clock_throttled") is not True:
        reason = _value(facts.row, "energy_reason")
        return [], checked + (
            f": {reason}" if reason and _value(facts.row, "clock_throttled") is None else ""
        )
    low = _value(facts.row, "sm_clock_min_mhz")
    gpus = _throttled_gpus(facts.run_dir / "telemetry.parquet")
    high = max((g[2] for g in gpus), default=None)
    shown = "; ".join(f"{node} {device}: {lo:.0f} of {hi:.0f} MHz" for node, device, hi, lo in gpus)
    effect = None
    if low is not None and high:
        effect = (0.0, round((1 - float(low) / float(high)) * 100, 1))
    return [
        Item(
            "telemetry",
            "GPU clocks throttled in the step window",
            f"SM clock fell below {THROTTLE_FRACTION:.0%} of the GPU's highest in the run"
            + (f": {shown}" if shown else f" (lowest {low} MHz)"),
            effect,
            CLOCK_SOURCE if effect else "",
            (energy_file, facts.path("telemetry.parquet")),
        )
    ], checked


def _throttled_gpus(path: Path) -> list[tuple[str, str, float, float]]:
    """(node, device, highest, lowest SM clock in MHz) of each GPU whose clock fell below
    ``THROTTLE_FRACTION`` of its highest anywhere in its samples."""
    try:
        samples = pd.read_parquet(path)
    except (OSError, ValueError):
        return []
    clocks = samples[samples["metric"] == "sm_clock_mhz"]
    out = []
    for (node, device), part in clocks.groupby(["node", "device"], sort=True):
        high, low = float(part["value"].max()), float(part["value"].min())
        if low < THROTTLE_FRACTION * high:
            out.append((str(node), str(device), high, low))
    return out


def step_spread(facts: RunFacts) -> tuple[list[Item], str]:
    checked = f"step times: spread over the window ({facts.path('steps.parquet')})"
    items = []
    steps = facts.steps
    if steps is not None and not steps.empty:
        window = steps[steps["in_window"]]["step_time_s"].dropna()
        if len(window) > 1 and window.mean() > 0:
            spread = float(window.std(ddof=0) / window.mean())
            median = float(window.median())
            if spread > SPREAD_LIMIT and median > 0:
                slow = window[window > 1.5 * median]
                excess = round((float(window.mean()) / median - 1) * 100, 1)
                items.append(
                    Item(
                        "step_spread",
                        "step time varies across the window",
                        f"std / mean {spread:.1%}; {len(slow)} of {len(window)} steps above 1.5x "
                        f"the median {median:.4g} s",
                        (0.0, max(excess, 0.0)),  # a figure, 0 where they add none
                        "what the slow steps add to the mean: (mean - median) / mean",
                        (facts.path("steps.parquet"),),
                    )
                )
    overlap = _value(facts.row, "overlap")
    if overlap:
        items.append(
            Item(
                "step_spread",
                "other runs' processes on the host",
                str(overlap),
                evidence=(facts.path(f"{facts.record.get('attempt_dir', '')}/run.json"),),
            )
        )
    return items, checked + "; per-rank step times are not logged (rank 0's only)"


def launch(facts: RunFacts) -> tuple[list[Item], str]:
    spec = facts.record.get("spec", {})
    spec_file = facts.path(f"{facts.record.get('attempt_dir', '')}/run_spec.json")
    checked = f"launch: parity data and stack ({spec_file})"
    if spec.get("framework") in (None, "torch"):
        return [], checked + ": the embedded workload has no reference launch"
    items = []
    parity = spec.get("parity") or {}
    if not parity:
        items.append(
            Item(
                "launch",
                "no reference launch settings for this run",
                "the catalog's parity data names no document for it",
                evidence=(spec_file,),
            )
        )
    for diff in parity.get("differences", []):
        items.append(
            Item(
                "launch",
                f"deliberate difference: {diff['name']}",
                f"reference {diff['reference']}; llmbench {diff['llmbench']} ({diff['reason']})",
                evidence=(spec_file,),
            )
        )
    stack = parity.get("stack") or {}
    if spec.get("container") == "none":
        items.append(
            Item(
                "launch",
                "framework from a venv, not the reference's image",
                "container none: the stage venv's packages",
                evidence=(spec_file,),
            )
        )
    elif stack and not stack.get("reference_stack"):
        items.append(
            Item(
                "launch",
                "a stack that is not the reference's",
                f"image {spec.get('image')}; the reference's {stack.get('reference_image')}",
                evidence=(spec_file,),
            )
        )
    return items, checked


def reference_row(facts: RunFacts) -> tuple[list[Item], str]:
    row = facts.row
    key = tuple(str(row[k]) for k in ("workload", "size", "dtype", "gpu_type"))
    rows = [
        r
        for r in published_results()
        if r.kind == "table" and (r.workload, r.size, r.dtype, r.gpu_type) == key
    ]
    checked = "published row: GBS and GPU count (catalog)"
    items = []
    same = [r for r in rows if r.gpus == int(row["gpus"])]
    if same:
        published = same[0]
        if published.gbs != int(row["global_batch_size"]):
            items.append(
                Item(
                    "reference_row",
                    "global batch size differs from the published row",
                    f"GBS {row['global_batch_size']} here, {published.gbs} in {published.source}",
                )
            )
    elif rows:
        scales = ", ".join(str(g) for g in sorted({r.gpus for r in rows}))
        items.append(
            Item(
                "reference_row",
                "GPU count differs from every published row",
                f"{row['gpus']} GPUs here; published at {scales} ({rows[0].source})",
            )
        )
    return items, checked


EVIDENCE: tuple[Callable[[RunFacts], tuple[list[Item], str]], ...] = (
    transport,
    node_health,
    telemetry,
    step_spread,
    launch,
    reference_row,
)


def rank(items: Sequence[Item]) -> list[Item]:
    """Items with a number first, largest upper bound first; then the rest by kind."""
    return sorted(
        items,
        key=lambda i: (
            i.effect_pct is None,
            -(i.effect_pct[1] if i.effect_pct else 0),
            ORDER.index(i.kind),
        ),
    )


def explain(facts: RunFacts) -> Explanation:
    items: list[Item] = []
    checked: list[str] = []
    for gather in EVIDENCE:
        found, what = gather(facts)
        items += found
        checked.append(what)
    row = facts.row
    deviation = _value(row, "deviation_pct")
    return Explanation(
        run_id=facts.run_id,
        verdict=_value(row, "verdict"),
        verdict_reason=_value(row, "verdict_reason"),
        deviation_pct=None if deviation is None else float(deviation),
        items=rank(items),
        checked=checked,
    )


# --- reading a results folder ---------------------------------------------------------------


def run_facts(
    results: Path, row: Mapping[str, Any], nodes: pd.DataFrame | None, steps: pd.DataFrame | None
) -> RunFacts:
    """The facts of one run of ``results`` (its folder under ``runs/``); ``steps`` are
    the run's rows of the steps table."""
    run_dir = results / "runs" / str(row["run_id"])
    try:
        record = read_record(run_dir / "run.json")
    except (OSError, ValueError):
        record = {}
    transport_data = read_run_transport(run_dir, record) if record else {}
    return RunFacts(row, results, record, transport_data, nodes, steps)


def read_nodes(results: Path) -> pd.DataFrame | None:
    path = results / "tables" / "nodes.parquet"
    return pd.read_parquet(path) if path.exists() else None


def explain_runs(
    results: Path, runs: pd.DataFrame, steps: pd.DataFrame | None, only_unexplained: bool = True
) -> list[Explanation]:
    """An explanation per run of ``runs`` (the runs whose verdict is slower or missing,
    unless ``only_unexplained`` is False)."""
    nodes = read_nodes(results)
    rows = [
        row
        for row in runs.to_dict("records")
        if not only_unexplained or _value(row, "verdict") in EXPLAINED_VERDICTS
    ]
    by_run: dict[Any, pd.DataFrame] = {}
    if steps is not None and not steps.empty and rows:
        wanted = steps[steps["run_id"].isin([row["run_id"] for row in rows])]
        by_run = dict(tuple(wanted.groupby("run_id", sort=False, observed=True)))
    return [explain(run_facts(results, row, nodes, by_run.get(row["run_id"]))) for row in rows]


def as_text(explanation: Explanation) -> str:
    """The explanation as ``llmbench explain`` prints it."""
    e = explanation
    verdict = e.verdict or "none"
    deviation = (
        f" ({e.deviation_pct:+.1f} % against the reference)" if e.deviation_pct is not None else ""
    )
    lines = [f"{e.run_id}: verdict {verdict}{deviation}"]
    if e.verdict_reason:
        lines.append(f"  {e.verdict_reason}")
    if not e.items:
        lines.append("no known cause found")
    for n, item in enumerate(e.items, start=1):
        effect = ""
        if item.effect_pct is not None:
            effect = f" [{effect_words(*item.effect_pct)}]"
        lines.append(f"{n}. {item.kind}: {item.title}{effect}")
        lines.append(f"   {item.detail}")
        if item.effect_source:
            lines.append(f"   source: {item.effect_source}")
        if item.evidence:
            lines.append(f"   evidence: {', '.join(item.evidence)}")
    lines.append("checked:")
    lines += [f"  - {c}" for c in e.checked]
    return "\n".join(lines) + "\n"


def as_json(explanations: Sequence[Explanation]) -> str:
    return json.dumps([e.as_dict() for e in explanations], indent=2) + "\n"
