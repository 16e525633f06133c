"""The one YAML loader of llmbench: the sweep config, site files, reference files, the
package's own catalog, schemas and preflight rules.

PyYAML alone keeps the last of two equal keys, names no line for some errors, raises
``UnicodeDecodeError`` on a binary file, and builds an alias bomb (a few lines whose
anchors refer to each other nine levels deep, billions of values once expanded) without
complaint, leaving the expansion to whatever walks the data next (a schema check that
printed one took 60 s and 2.3 GB). Here each of those is a ``ConfigError`` of one line
naming the file (the line and column where YAML has them) and what is allowed: a key
written twice, a value nested deeper than ``MAX_DEPTH``, a document that expands to more
than ``MAX_VALUES`` values, a value that contains itself, a file over ``MAX_YAML_BYTES``.
``check_size`` applies the same limits to data YAML reached llmbench through another
loader (Snakemake's ``--configfile``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from llmbench.errors import ConfigError

MAX_YAML_BYTES = 64 * 1024 * 1024  # a config is kilobytes; this only stops a runaway file
MAX_VALUES = 1_000_000
"""Values (mappings, lists, scalars and keys) a document may hold with its aliases
expanded: the catalog's largest file holds about 20,000, a 10,000-run config well under
this; a YAML alias bomb holds billions."""
MAX_DEPTH = 64
"""Nesting of mappings and lists: a config is a few levels deep."""
_FAST = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML has it: the same data, a few times faster (the
package's own files are read at every workflow start)."""


class _StrictMapping:
    """Refuses a key written twice in one mapping (PyYAML keeps the last)."""

    source = "config"

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: SafeLoader reports it
                break
            if first is not None:
                mark = key_node.start_mark
                raise ConfigError(
                    f"{self.source}: line {mark.line + 1}, column {mark.column + 1}: key "
                    f"{key!r} is already set at line {first.start_mark.line + 1}; "
                    "allowed: each key once per mapping"
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]


class _StrictLoader(_StrictMapping, yaml.SafeLoader):
    """For files people write: PyYAML's reader, which names a bad character's offset."""


class _FastStrictLoader(_StrictMapping, _FAST):  # type: ignore[misc, valid-type]
    """For the package's own files: libyaml's parser, the same construction."""


def _node_values(root: yaml.Node | None, source: str) -> None:
    """``_count`` on the composed document, before anything is constructed: alias nodes
    are the same node objects, so the walk counts what their expansion would be."""
    if root is not None:
        _count(root, source, _NODE_TREE)


class _Tree:
    """How ``_count`` walks one kind of tree: a node's children (None for a scalar),
    whether it is a mapping (children are key, value, key, value ...), a key's text."""

    def __init__(self, mapping: Any, sequence: Any, key: Any) -> None:
        self.mapping, self.sequence, self.key = mapping, sequence, key

    def children(self, node: Any) -> list[Any] | None:
        if isinstance(node, self.mapping):
            items = node.value if isinstance(node, yaml.Node) else node.items()
            return [part for pair in items for part in pair]
        if isinstance(node, self.sequence):
            return list(node.value if isinstance(node, yaml.Node) else node)
        return None


_NODE_TREE = _Tree(yaml.MappingNode, yaml.SequenceNode, lambda n: getattr(n, "value", n))
_VALUE_TREE = _Tree(Mapping, list | tuple, lambda k: k)

Frame = tuple[Any, list[Any] | None, int]


def _where(stack: list[Frame], tree: _Tree) -> str:
    """The key of the value being walked, as messages name keys (``kubernetes.context``):
    mapping keys down to the first list."""
    out = ""
    for node, kids, index in stack:
        if kids is None or not isinstance(node, tree.mapping):
            break
        position = index - 1
        key = kids[position - 1] if position % 2 else kids[position]
        out += f".{tree.key(key)}" if out else str(tree.key(key))
    return out or "(top level)"


def _count(root: Any, source: str, tree: _Tree) -> int:
    """Values under ``root`` with shared parts counted each time they are reached
    (memoized by identity); ``ConfigError`` past ``MAX_VALUES`` or ``MAX_DEPTH``, or for
    a value that contains itself."""
    sizes: dict[int, int] = {}
    open_ids = {id(root)}
    # an explicit stack: deep nesting must be refused, not overflow Python's
    stack: list[Frame] = [(root, tree.children(root), 0)]
    totals = [1]
    while stack:
        node, kids, index = stack[-1]
        if kids is None or index >= len(kids):
            stack.pop()
            open_ids.discard(id(node))
            size = totals.pop()
            if kids is not None:
                sizes[id(node)] = size
            if totals:
                totals[-1] += size
                if totals[-1] > MAX_VALUES:
                    raise ConfigError(_too_many(source, _where(stack, tree)))
            continue
        stack[-1] = (node, kids, index + 1)
        child = kids[index]
        if id(child) in sizes:
            totals[-1] += sizes[id(child)]
            if totals[-1] > MAX_VALUES:
                raise ConfigError(_too_many(source, _where(stack, tree)))
            continue
        grand = tree.children(child)
        if grand is None:
            totals[-1] += 1
            continue
        where = _where(stack, tree)
        if id(child) in open_ids:
            raise ConfigError(
                f"{source}: {where}: a value that contains itself (a YAML alias inside its "
                "own anchor); allowed: aliases to values defined before them"
            )
        if len(stack) >= MAX_DEPTH:
            raise ConfigError(
                f"{source}: {where}: values nested more than {MAX_DEPTH} levels deep; "
                f"allowed: at most {MAX_DEPTH} levels of mappings and lists"
            )
        open_ids.add(id(child))
        stack.append((child, grand, 0))
        totals.append(1)
    return sizes.get(id(root), 1)


def _too_many(source: str, where: str) -> str:
    return (
        f"{source}: {where}: more than {MAX_VALUES:,} values with the YAML aliases (*name) "
        f"expanded (an alias bomb?); allowed: a document of at most {MAX_VALUES:,} values"
    )


def check_size(data: Any, source: str) -> int:
    """The number of values in ``data`` (aliases counted where they are used); one-line
    ``ConfigError`` past the module's limits (see its docstring)."""
    return _count(data, source, _VALUE_TREE)


def load_yaml_text(text: str, source: str, fast: bool = False) -> Any:
    """Parse YAML ``text`` within the module's limits; errors name ``source``, the line
    and the column. ``fast``: libyaml's parser (the package's own files)."""
    try:
        loader = (_FastStrictLoader if fast else _StrictLoader)(text)
    except yaml.reader.ReaderError as err:  # PyYAML's reader: unprintable characters
        raise ConfigError(
            f"{source}: character #x{err.character:04x} at offset {err.position} is not "
            "allowed in YAML; allowed: printable UTF-8 text"
        ) from None
    loader.source = source
    try:
        node = loader.get_single_node()
        _node_values(node, source)
        return None if node is None else loader.construct_document(node)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = " ".join(filter(None, [err.context, err.problem]))
        raise ConfigError(f"{source}: {where}invalid YAML: {what}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: invalid YAML: {err}") from None
    except RecursionError:  # PyYAML composes nested collections recursively
        raise ConfigError(
            f"{source}: values nested too deeply to read; allowed: at most {MAX_DEPTH} "
            "levels of mappings and lists"
        ) from None
    finally:
        loader.dispose()


def read_yaml_file(path: str | os.PathLike[str]) -> Any:
    """The YAML document in ``path``: a regular UTF-8 text file, each key once."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    if not stat.S_ISREG(info.st_mode):  # a FIFO would block the read forever
        raise ConfigError(f"{path}: not a regular file; allowed: a YAML text file")
    if info.st_size > MAX_YAML_BYTES:
        raise ConfigError(
            f"{path}: {info.st_size} bytes; allowed: a YAML file of at most {MAX_YAML_BYTES} bytes"
        )
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ConfigError(
            f"{path}: line {line}: byte 0x{data[err.start]:02x} is not UTF-8 text (a binary "
            "file?); allowed: a UTF-8 YAML file"
        ) from None
    return load_yaml_text(text, str(path))
