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
  count; for a performance-summary row every field of ``verdict_note``: MBS, TP, PP, CP,
  VP, EP, FSDP, GPU count, container).

Items with a number (``effect_pct``, a low-high range in percent of the step time, with
its source) come first, largest first; the others follow in the order above. What the
evidence could not read (``RunFacts.unread``, filled by ``llmbench.aggregate.explain_inputs``,
the one checked reader of a results folder) is said in its ``checked`` line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from llmbench.aggregate.explain_transport import transport
from llmbench.aggregate.explanation import Explanation, Item, RunFacts, rank, row_value
from llmbench.core import run_folder
from llmbench.core.catalog import published_results
from llmbench.core.results_layout import NODES_PAGE, NODES_TABLE, page
from llmbench.launch.slurm import expand_nodelist
from llmbench.telemetry.energy import THROTTLE_FRACTION

CLOCK_SOURCE = (
    "upper bound: a step's GPU time scales at most with its SM clock, and every rank waits "
    "for the slowest GPU (a memory- or network-bound step loses less)"
)
SPREAD_LIMIT = 0.05
"""Step-time std / mean in the window above which the spread is listed."""


# --- one function per kind of evidence ----------------------------------------------------


def node_health(facts: RunFacts) -> tuple[list[Item], str]:
    nodes = expand_nodelist(row_value(facts.row, "nodelist")) or [str(facts.row.get("host") or "")]
    table = facts.nodes
    if "nodes" in facts.unread:
        return [], f"node health: not checked: {facts.unread['nodes']}"
    if table is None or table.empty:
        return [], "node health: no preflight nodes table (preflight off)"
    mine = table[table["node"].isin(nodes)]
    checked = (
        f"node health: preflight of {len(mine)} of the run's {len(nodes)} node(s) ({NODES_TABLE})"
    )
    items = []
    for row in mine.to_dict("records"):
        if row["status"] != "ok":
            items.append(
                Item(
                    "node_health",
                    f"node {row['node']} failed preflight",
                    str(row_value(row, "reason") or "no reason recorded"),
                    evidence=(NODES_TABLE, page(NODES_PAGE)),
                )
            )
        if row_value(row, "warnings"):
            items.append(
                Item(
                    "node_health",
                    f"node {row['node']} preflight warnings",
                    str(row["warnings"]),
                    evidence=(NODES_TABLE,),
                )
            )
    return items, checked


def telemetry(facts: RunFacts) -> tuple[list[Item], str]:
    energy_file = facts.path(run_folder.ENERGY)
    checked = f"telemetry: SM clocks in the step window ({energy_file})"
    if row_value(facts.row, "clock_throttled") is not True:
        reason = row_value(facts.row, "energy_reason")
        return [], checked + (
            f": {reason}" if reason and row_value(facts.row, "clock_throttled") is None else ""
        )
    low = row_value(facts.row, "sm_clock_min_mhz")
    gpus = _throttled_gpus(facts.telemetry)
    if "telemetry" in facts.unread:
        checked += f"; per-GPU clocks not shown: {facts.unread['telemetry']}"
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
            (energy_file, facts.path(run_folder.TELEMETRY)),
        )
    ], checked


def _throttled_gpus(samples: pd.DataFrame | None) -> list[tuple[str, str, float, float]]:
    """(node, device, highest, lowest SM clock in MHz) of each GPU whose clock fell below
    ``THROTTLE_FRACTION`` of its highest anywhere in its samples."""
    if samples is None:
        return []
    clocks = samples[samples["metric"] == "sm_clock_mhz"]
    out = []
    for (node, device), part in clocks.groupby(["node", "device"], sort=True):
        high, low = float(part["value"].max()), float(part["value"].min())
        if low < THROTTLE_FRACTION * high:
            out.append((str(node), str(device), high, low))
    return out


def step_spread(facts: RunFacts) -> tuple[list[Item], str]:
    checked = f"step times: spread over the window ({facts.path(run_folder.STEPS)})"
    if "steps" in facts.unread:
        checked = f"step times: not checked: {facts.unread['steps']}"
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
                        (facts.path(run_folder.STEPS),),
                    )
                )
    overlap = row_value(facts.row, "overlap")
    if overlap:
        items.append(
            Item(
                "step_spread",
                "other runs' processes on the host",
                str(overlap),
                evidence=(
                    facts.path(f"{facts.record.get('attempt_dir', '')}/{run_folder.RECORD}"),
                ),
            )
        )
    if "steps" in facts.unread:
        return items, checked
    return items, checked + "; per-rank step times are not logged (rank 0's only)"


DIFFERENCE_FIELDS = ("name", "reference", "llmbench", "reason")
"""A deliberate difference of the run spec's parity data (``spec.parity.differences``)."""


def _differences(parity: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], str]:
    """The well-formed entries of ``parity.differences``, and which were not."""
    entries = parity.get("differences") or []
    entries = entries if isinstance(entries, list) else []
    good = [d for d in entries if isinstance(d, Mapping) and all(k in d for k in DIFFERENCE_FIELDS)]
    bad = [str(n) for n, d in enumerate(entries) if not any(d is g for g in good)]
    why = (
        f"; spec.parity.differences[{', '.join(bad)}] not listed (no "
        f"{'/'.join(DIFFERENCE_FIELDS)}: damaged, or another version's)"
        if bad
        else ""
    )
    return good, why


def launch(facts: RunFacts) -> tuple[list[Item], str]:
    if "record" in facts.unread:
        return [], f"launch: not checked: {facts.unread['record']}"
    spec = facts.record.get("spec", {})
    spec_file = facts.path(f"{facts.record.get('attempt_dir', '')}/{run_folder.SPEC}")
    checked = f"launch: parity data and stack ({spec_file})"
    if spec.get("framework") in (None, "torch"):
        return [], checked + ": the embedded workload has no reference launch"
    items = []
    parity = spec.get("parity") or {}
    parity = parity if isinstance(parity, Mapping) else {}
    if not parity:
        items.append(
            Item(
                "launch",
                "no reference launch settings for this run",
                "the catalog's parity data names no document for it",
                evidence=(spec_file,),
            )
        )
    differences, skipped = _differences(parity)
    for diff in differences:
        items.append(
            Item(
                "launch",
                f"deliberate difference: {diff['name']}",
                f"reference {diff['reference']}; llmbench {diff['llmbench']} ({diff['reason']})",
                evidence=(spec_file,),
            )
        )
    stack = parity.get("stack") or {}
    stack = stack if isinstance(stack, Mapping) else {}
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
    return items, checked + skipped


def reference_row(facts: RunFacts) -> tuple[list[Item], str]:
    if "reference_row" in facts.unread:
        return [], f"published row: not compared: {facts.unread['reference_row']}"
    row = facts.row
    source, note = row_value(row, "reference_source"), row_value(row, "verdict_note")
    if source and str(source).startswith("published summary") and note:
        # the summary row it was judged against: each field it differs in (verdict_note)
        detail = f"{note} ({source})"
        title = "the published row was measured with another configuration"
        checked = "published row: parallelism, GPU count and container (verdict_note)"
        return [Item("reference_row", title, detail)], checked
    key = tuple(str(row[k]) for k in ("workload", "size", "dtype", "gpu_type"))
    rows = [
        r
        for r in published_results()
        if r.kind == "table" and (r.workload, r.size, r.dtype, r.gpu_type) == key
    ]
    checked = "published row: GBS and GPU count (catalog)"
    items = []
    gpus, gbs = _whole(row, "gpus"), _whole(row, "global_batch_size")
    same = [r for r in rows if r.gpus == gpus]
    if same:
        published = same[0]
        if gbs is not None and published.gbs != gbs:
            items.append(
                Item(
                    "reference_row",
                    "global batch size differs from the published row",
                    f"GBS {gbs} here, {published.gbs} in {published.source}",
                )
            )
    elif rows and gpus is not None:
        scales = ", ".join(str(g) for g in sorted({r.gpus for r in rows}))
        items.append(
            Item(
                "reference_row",
                "GPU count differs from every published row",
                f"{gpus} GPUs here; published at {scales} ({rows[0].source})",
            )
        )
    return items, checked


def _whole(row: Mapping[str, Any], name: str) -> int | None:
    """A count of the row, None where it holds none (NaN, a missing value)."""
    value = row_value(row, name)
    return int(value) if isinstance(value, int | float) and math.isfinite(value) else None


EVIDENCE: tuple[Callable[[RunFacts], tuple[list[Item], str]], ...] = (
    transport,
    node_health,
    telemetry,
    step_spread,
    launch,
    reference_row,
)


def explain(facts: RunFacts) -> Explanation:
    items: list[Item] = []
    checked: list[str] = []
    for gather in EVIDENCE:
        found, what = gather(facts)
        items += found
        checked.append(what)
    checked += facts.notes
    row = facts.row
    deviation = row_value(row, "deviation_pct")
    return Explanation(
        run_id=facts.run_id,
        verdict=row_value(row, "verdict"),
        verdict_reason=row_value(row, "verdict_reason"),
        deviation_pct=None if deviation is None else float(deviation),
        items=rank(items),
        checked=checked,
    )
