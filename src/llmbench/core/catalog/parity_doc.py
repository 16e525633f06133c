"""The settings part of docs/parity.md, generated from ``parity.yaml`` and ``images.yaml``:
per workload family and spec document, one table per GPU type the catalog runs it on
(its reference image, then every setting that applies there, with its citations), then
the document's deliberate differences; before them, what llmbench adds to every launch.

``with_settings`` is that file's text with everything after the ``MARKER`` line
generated again; ``python -m benchmarks.parity_doc`` writes it, and a test keeps the
committed file equal to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from llmbench.core.catalog.load import load_catalog
from llmbench.core.catalog.parity import additions, families, image_stacks
from llmbench.errors import ConfigError

MARKER = "<!-- generated from catalog/parity.yaml and catalog/images.yaml: do not edit below -->"


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return value if isinstance(value, str) else yaml.safe_dump(value).split("\n")[0]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _sources(sources: Sequence[str]) -> str:
    return "<br>".join(f"`{s}`" for s in sources)


def _condition(name: str, value: Any) -> str:
    if name in ("min", "any_min"):
        joiner = " and " if name == "min" else " or "
        return joiner.join(f"{k}>={v}" for k, v in value.items())
    if name in ("nodes_min", "nodes_max"):
        return f"nodes{'>=' if name == 'nodes_min' else '<='}{value}"
    if isinstance(value, list):
        return f"{name} {'/'.join(map(str, value))}"
    return f"{name} {value}"


def _when(item: Mapping[str, Any], per_gpu: bool) -> str:
    """The setting's conditions; a GPU type's own table leaves out its GPU condition."""
    parts = []
    when = {k: v for k, v in item.get("when", {}).items() if not (per_gpu and k == "gpu_type")}
    if when:
        parts.append(", ".join(_condition(k, v) for k, v in when.items()))
    unless = dict(item.get("unless", {}))
    if per_gpu and set(unless) == {"gpu_type"}:
        unless = {}
    if unless:
        parts.append(f"not ({', '.join(_condition(k, v) for k, v in unless.items())})")
    for name, requirement in item.get("requires", {}).items():
        parts.append(f"image's {name} {requirement}")
    return "; ".join(parts) or "all runs"


def _on_gpu(item: Mapping[str, Any], gpu_type: str) -> bool:
    """The setting can apply on ``gpu_type`` (its other conditions are in its row)."""
    when, unless = item.get("when", {}), item.get("unless", {})
    if "gpu_type" in when and gpu_type not in when["gpu_type"]:
        return False
    return not (set(unless) == {"gpu_type"} and gpu_type in unless["gpu_type"])


def _image_line(entry: Mapping[str, Any], gpu_type: str) -> str:
    images = [i for i in entry.get("images", []) if _on_gpu(i, gpu_type)]
    if not images:
        return "Reference image: none recorded."
    image = images[0]
    stack = image_stacks().get(image["ref"], {})
    versions = ", ".join(f"{k} {v}" for k, v in stack.get("versions", {}).items())
    return (
        f"Reference image: `{image['ref']}` ({versions or 'versions unknown'}); "
        f"{_cell(image['supports'])} ({', '.join(f'`{s}`' for s in image['source'])})."
    )


def _gpu_types(workload: str, document: str) -> list[str]:
    rows = load_catalog().rows(workload, include_superseded=True, release=None)
    return sorted({r.gpu_type for r in rows if r.source == document})


def _settings_table(entry: Mapping[str, Any], gpu_type: str) -> list[str]:
    out = ["| kind | setting | value | when | source | what the source shows |"]
    out.append("|---|---|---|---|---|---|")
    for item in entry["settings"]:
        if not _on_gpu(item, gpu_type):
            continue
        supports = _cell(item["supports"])
        if "unverified" in item:
            supports = f"**unverified**: {_cell(item['unverified'])}. {supports}"
        if "addition" in item:
            own = item["addition"]
            supports = (f"{supports}. **llmbench's own value** (reference: "
                        f"{_cell(own['reference'])}): {_cell(own['reason'])}")  # fmt: skip
        out.append(
            f"| {item['kind']} | `{item['name']}` | `{_cell(_value(item['value']))}` | "
            f"{_cell(_when(item, per_gpu=True))} | {_sources(item['source'])} | {supports} |"
        )
    return out


def parity_markdown() -> str:
    """The generated part of docs/parity.md (after ``MARKER``)."""
    out = ["### llmbench's additions to every launch", ""]
    out += ["| addition | reference | llmbench | on | why |", "|" + "---|" * 5]
    out += [
        f"| {_cell(a['name'])} | {_cell(a['reference'])} | {_cell(a['llmbench'])} | "
        f"{_cell(_when(a, per_gpu=False))} | {_cell(a['reason'])} |"
        for a in additions()
    ]
    out.append("")
    for workload, documents in families().items():
        for document, entry in documents.items():
            out += [f"### {workload} — {document}", "", f"Reference: {entry['reference']}.", ""]
            for gpu_type in _gpu_types(workload, document):
                out += [f"#### {workload} on {gpu_type.upper()}", "", _image_line(entry, gpu_type)]
                out += ["", *_settings_table(entry, gpu_type), ""]
            if entry.get("differences"):
                out += [f"#### {workload} — deliberate differences", ""]
                out += ["| setting | reference | llmbench | why | source |", "|" + "---|" * 5]
                out += [
                    f"| {_cell(d['name'])} | {_cell(d['reference'])} | {_cell(d['llmbench'])} | "
                    f"{_cell(d['reason'])} | {_sources(d['source'])} |"
                    for d in entry["differences"]
                ]
                out.append("")
    return "\n".join(out)


def with_settings(text: str, source: str = "docs/parity.md") -> str:
    """``text`` (docs/parity.md) with everything after ``MARKER`` replaced by
    ``parity_markdown()``; a ``ConfigError`` naming ``source`` when it has no marker."""
    if MARKER not in text:
        raise ConfigError(f"{source}: no line {MARKER!r}; allowed: the parity page with it")
    return text[: text.index(MARKER) + len(MARKER)] + "\n\n" + parity_markdown()
