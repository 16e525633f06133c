"""Every dotted name in docs/architecture.md's prose names something that exists.

A name in backticks with a dot, ``launch.slurm.slurm_resources`` or
``core/catalog/load.WORKLOAD_FILES`` (a path, then an attribute), is read relative to the
package ``llmbench`` when its first part is one of the package's own modules, else as the
end of a module's dotted name (``site_file.SITE_KEYS`` is ``llmbench.core.site_file``'s);
a standard-library name (``os.environ``) is read in the standard library.
File names (``run.json``, ``explain.py``) are not dotted names."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import sys
from functools import cache
from pathlib import Path

import llmbench

ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
FILE_SUFFIXES = frozenset(
    {"py", "yaml", "yml", "md", "json", "parquet", "csv", "sh", "log", "smk", "html", "toml"}
)
DOTTED = re.compile(r"`([A-Za-z_][\w/]*(?:\.[A-Za-z_]\w*)+)`")


def dotted_names(text: str) -> list[str]:
    """The dotted names in backticks of ``text``, in order, paths written with dots."""
    names = []
    for found in DOTTED.findall(text):
        if found.rsplit(".", 1)[1] in FILE_SUFFIXES:
            continue
        names.append(found.replace("/", "."))
    return names


@cache
def module_names() -> tuple[str, ...]:
    found = ["llmbench"]
    for info in pkgutil.walk_packages(llmbench.__path__, "llmbench."):
        found.append(info.name)
    return tuple(found)


def _has_attribute(owner: object, name: str) -> bool:
    if hasattr(owner, name):
        return True
    # a dataclass field without a default is not a class attribute
    return dataclasses.is_dataclass(owner) and name in {f.name for f in dataclasses.fields(owner)}


def _resolves_under(module_name: str, attributes: list[str]) -> bool:
    owner: object = importlib.import_module(module_name)
    for attribute in attributes:
        if isinstance(owner, type(llmbench)) and f"{owner.__name__}.{attribute}" in module_names():
            owner = importlib.import_module(f"{owner.__name__}.{attribute}")
            continue
        if not _has_attribute(owner, attribute):
            return False
        owner = getattr(owner, attribute, None)
    return True


def resolves(name: str) -> bool:
    """Whether ``name`` is a module of llmbench or an attribute of one (see the docstring)."""
    parts = name.split(".")
    if parts[0] == "llmbench":
        return _resolves_under("llmbench", parts[1:])
    if f"llmbench.{parts[0]}" in module_names():
        return _resolves_under("llmbench", parts)
    if parts[0] in sys.stdlib_module_names:  # `os.environ`: the standard library's own
        return _resolves_under(parts[0], parts[1:])
    # a short name: the end of a module's name, then attributes
    for module_name in module_names():
        if module_name.endswith(f".{parts[0]}") and _resolves_under(module_name, parts[1:]):
            return True
    return False


def test_every_dotted_name_in_the_architecture_prose_resolves() -> None:
    names = dotted_names(ARCHITECTURE.read_text(encoding="utf-8"))
    assert len(names) > 30  # the scan finds the prose's names, not nothing
    assert [name for name in names if not resolves(name)] == []


def test_the_check_finds_a_name_that_does_not_exist() -> None:
    text = (
        "renders `launch.script.render_launch_script`, then `core/catalog/load.NO_SUCH` "
        "and `nowhere.thing`; `site_file.SITE_KEYS`, `explanation.RunFacts.unread`, "
        "`core/catalog/load.WORKLOAD_FILES` and `llmbench.__version__`, beside `run.json`."
    )
    names = dotted_names(text)
    assert "run.json" not in names
    assert [name for name in names if not resolves(name)] == [
        "launch.script.render_launch_script",
        "core.catalog.load.NO_SUCH",
        "nowhere.thing",
    ]
