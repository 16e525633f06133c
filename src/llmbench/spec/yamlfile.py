"""Strict reading of the YAML files people write (the sweep config).

PyYAML alone keeps the last of two equal keys, names no line for some errors and raises
``UnicodeDecodeError`` on a binary file; here each of those is a ``ConfigError`` of one
line naming the file, the line and column, and what is allowed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from llmbench.errors import ConfigError

MAX_YAML_BYTES = 64 * 1024 * 1024  # a config is kilobytes; this only stops a runaway file


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key written twice in one mapping."""

    source = "config"

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
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
        return super().construct_mapping(node, deep=deep)


def load_yaml_text(text: str, source: str) -> Any:
    """Parse YAML ``text``; errors name ``source``, the line and the column."""
    try:
        loader = _StrictLoader(text)  # checks for unprintable characters here
    except yaml.reader.ReaderError as err:
        raise ConfigError(
            f"{source}: character #x{err.character:04x} at offset {err.position} is not "
            "allowed in YAML; allowed: printable UTF-8 text"
        ) from None
    loader.source = source
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = " ".join(filter(None, [err.context, err.problem]))
        raise ConfigError(f"{source}: {where}invalid YAML: {what}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: invalid YAML: {err}") from None
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
