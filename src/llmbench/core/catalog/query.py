"""Questions asked of the loaded catalog: names, models, rows, scales.

``Catalog`` answers them from the records ``llmbench.core.catalog.load`` builds; every unknown
name is a ConfigError that lists the allowed ones.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from llmbench.core.catalog.records import (
    DEFAULT_RELEASE,
    DTYPES,
    SCALINGS,
    Checkpoint,
    Document,
    GpuType,
    ModelSpec,
    Profiling,
    RecipeRow,
    Release,
    Workload,
)
from llmbench.core.catalog.rules import scale_message, with_overrides
from llmbench.core.runspec import FORMER_RELEASE_NAMES, current_release
from llmbench.errors import ConfigError

RELEASE_ALL = "all"
"""``llmbench recipes --release all``: every release's rows."""


def not_allowed(kind: str, value: object, allowed: Iterable[str], context: str = "") -> ConfigError:
    """``kind=value is not a kind [of context]; allowed: ...`` as an error to raise."""
    where = f" of {context}" if context else ""
    return ConfigError(f"{kind}={value} is not a {kind}{where}; allowed: {', '.join(allowed)}")


class Catalog:
    """Every workload, size, dtype, GPU type and scale of every reference release,
    validated."""

    def __init__(
        self,
        documents: Mapping[str, Document],
        gpus: Mapping[str, GpuType],
        models: Mapping[str, tuple[ModelSpec, ...]],
        workloads: Mapping[str, Workload],
        rows: Iterable[RecipeRow],
        releases: Mapping[str, Release] | None = None,
    ) -> None:
        self._documents = dict(documents)
        self._gpus = dict(gpus)
        self._models = dict(models)
        self._workloads = dict(workloads)
        self._rows = list(rows)
        self._releases = dict(releases or {})

    # --- names -----------------------------------------------------------------------
    def workloads(self, release: str | None = DEFAULT_RELEASE) -> list[str]:
        """Workload ids with rows in ``release`` (dgxc-2025 by default; None: every
        release's), sorted."""
        if release is None:
            return sorted(self._workloads)
        return sorted({r.workload for r in self._rows if r.release == release})

    def workload(self, workload: str) -> Workload:
        """The workload record; ConfigError naming the allowed ids."""
        if workload not in self._workloads:
            raise not_allowed("workload", workload, self._workloads_by_release())
        return self._workloads[workload]

    def _workloads_by_release(self) -> list[str]:
        """The default release's workloads, then each other release's own, marked."""
        allowed = self.workloads()
        for release in self.releases()[1:]:
            more = [w for w in self.workloads(release) if w not in allowed]
            allowed += [f"{w} (release {release})" for w in more]
        return allowed

    def gpu_types(self) -> list[str]:
        """GPU type ids, sorted."""
        return sorted(self._gpus)

    def gpu(self, gpu_type: str) -> GpuType:
        """GPUs per node, CPU arch and peak TFLOPS of ``gpu_type``."""
        if gpu_type not in self._gpus:
            raise not_allowed("gpu_type", gpu_type, self.gpu_types())
        return self._gpus[gpu_type]

    def releases(self) -> list[str]:
        """Release ids, the default (dgxc-2025) first."""
        return sorted(self._releases, key=lambda r: (r != DEFAULT_RELEASE, r))

    def release_name(self, value: object, allow_all: bool = False) -> str:
        """The release ``value`` names, the one rule for every place a person writes one
        (a sweep entry's ``release:``, ``llmbench recipes --release``, ``calc``): case
        and surrounding spaces do not matter (``" V26.08 "`` is ``v26.08``); ``all``
        (every release) only where ``allow_all``; a former name (``spec``) is its
        release's current one (``dgxc-2025``). Else one line naming the value, quoted
        (an empty or padded value stays visible), and the releases."""
        allowed = [*self.releases(), *([RELEASE_ALL] if allow_all else [])]
        name = current_release(value.strip().lower()) if isinstance(value, str) else None
        if name in allowed:
            return name
        if not isinstance(value, str):
            shown, why = type(value).__name__, "is not a release name (a string)"
        elif value.strip().lower() == RELEASE_ALL:
            shown, why = repr(value), "selects every release in `llmbench recipes`, not one"
        else:
            shown = repr(value) if len(value) <= 50 else f"{value[:40]!r}...[{len(value)} chars]"
            why = "is not a release"
        renamed = FORMER_RELEASE_NAMES.items()
        former = "; ".join(f"{old} is the former name of {new}" for old, new in renamed)
        raise ConfigError(
            f"release: {shown} {why}; allowed: {', '.join(allowed)} (any case, surrounding "
            f"spaces ignored; {former})"
        )

    def release(self, release: str) -> Release:
        """One reference release; ConfigError naming the allowed ids."""
        if release not in self._releases:
            raise not_allowed("release", release, self.releases())
        return self._releases[release]

    def document(self, source: str) -> Document:
        """One spec document's record."""
        if source not in self._documents:
            raise not_allowed("source", source, sorted(self._documents))
        return self._documents[source]

    def profiling(self, row: RecipeRow) -> Profiling | None:
        """Nsight defaults of the document the row comes from (None: it states none)."""
        return self.document(row.source).profiling

    def checkpoints(self, workload: str, size: str | None = None) -> list[Checkpoint]:
        """Checkpoint facts of a workload (all documents), optionally for one size."""
        return [c for c in self.workload(workload).checkpoints if size in (None, c.size)]

    # --- models ----------------------------------------------------------------------
    def model(self, workload: str, size: str, source: str | None = None) -> ModelSpec:
        """Shape + FLOPs family for a workload's size: the newest document's unless
        ``source`` names another document that gives one."""
        sizes = self.workload(workload).sizes
        if size not in sizes:
            raise not_allowed("size", size, sorted(sizes), workload)
        specs = self._models[sizes[size]]
        if source is None:
            return specs[0]
        for spec in specs:
            if spec.source == source:
                return spec
        return specs[0]

    # --- rows ------------------------------------------------------------------------
    def rows(
        self,
        workload: str | None = None,
        size: str | None = None,
        dtype: str | None = None,
        gpu_type: str | None = None,
        scaling: str | None = None,
        include_superseded: bool = False,
        release: str | None = DEFAULT_RELEASE,
    ) -> list[RecipeRow]:
        """Catalog rows matching every given filter: superseded rows only on request, the
        rows of ``release`` (dgxc-2025 by default; None: every release's)."""
        return list(
            self._rows_cached(workload, size, dtype, gpu_type, scaling, include_superseded, release)
        )

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - the catalog lives as long as the process
    def _rows_cached(
        self,
        workload: str | None,
        size: str | None,
        dtype: str | None,
        gpu_type: str | None,
        scaling: str | None,
        include_superseded: bool,
        release: str | None = None,
    ) -> tuple[RecipeRow, ...]:
        # A 10,000-run sweep looks rows up once per run: a scan each time adds up.
        self._check_names(workload, size, dtype, gpu_type, scaling)
        if release is not None:
            self.release(release)
        wanted = {
            "workload": workload,
            "size": size,
            "dtype": dtype,
            "gpu_type": gpu_type,
            "scaling": scaling,
            "release": release,
        }
        return tuple(
            r
            for r in self._rows
            if (include_superseded or r.superseded_by is None)
            and all(v is None or getattr(r, k) == v for k, v in wanted.items())
        )

    def row(
        self,
        workload: str,
        size: str,
        dtype: str,
        gpu_type: str,
        gpus: int,
        scaling: str = "weak",
        source: str | None = None,
        release: str = DEFAULT_RELEASE,
    ) -> RecipeRow:
        """The row for one scale of ``release``; a scale inside a formula range that is not
        listed is derived from the formulas and validated. ``source`` picks a superseded
        document."""
        candidates = [
            r
            for r in self.rows(
                workload, size, dtype, gpu_type, scaling, include_superseded=True, release=release
            )
            if (r.source == source if source else r.superseded_by is None)
        ]
        if not candidates:
            raise self._no_rows(workload, size, dtype, gpu_type, scaling, source, release)
        for r in candidates:
            if r.gpus == gpus:
                return r
        template = candidates[0]
        lo_hi = template.scale_range
        if lo_hi is not None and lo_hi[0] <= gpus <= lo_hi[1]:
            return with_overrides(template, gpus=gpus)
        raise ConfigError(f"gpus={gpus} {scale_message(template)}")

    def why_no_rows(
        self,
        filters: Mapping[str, str | None],
        release: str | None,
        include_superseded: bool = False,
    ) -> str:
        """Why ``rows(**filters, release=release)`` is empty, in one line: the first filter
        (workload, size, dtype, gpu_type, in that order) that leaves no row, with the
        values the rows before it have and the releases that have the selection."""
        where = f" in release {release}" if release else ""
        kept: dict[str, str] = {}
        for key in ("workload", "size", "dtype", "gpu_type"):
            value = filters.get(key)
            if value is None:
                continue
            rows = self.rows(**kept, release=release, include_superseded=include_superseded)
            if not any(getattr(r, key) == value for r in rows):
                have = ", ".join(sorted({str(getattr(r, key)) for r in rows}))
                selection = {**kept, key: value}
                others = sorted(
                    {r.release for r in self.rows(**selection, release=None,
                                                  include_superseded=True)} - {release}
                )  # fmt: skip
                if kept:
                    line = f"no {' '.join(kept.values())} row has {key} {value}{where}"
                    line += f"; its {key}s there: {have}"
                else:
                    line = f"{value} is not{where or ' in the catalog'}"
                    line += f" (it has {have})"
                if others:
                    line += f"; it is in: {', '.join(others)} (--release {others[0]})"
                return line
            kept[key] = value
        return f"no row of {' '.join(kept.values()) or 'the catalog'}{where}"

    def scales(
        self,
        workload: str,
        size: str,
        dtype: str,
        gpu_type: str,
        scaling: str = "weak",
        release: str = DEFAULT_RELEASE,
    ) -> list[int]:
        """The listed scales (GPU counts) of one configuration."""
        rows = self.rows(workload, size, dtype, gpu_type, scaling, release=release)
        return sorted({r.gpus for r in rows})

    def _check_names(
        self,
        workload: str | None,
        size: str | None,
        dtype: str | None,
        gpu_type: str | None,
        scaling: str | None,
    ) -> None:
        if workload is not None:
            sizes = self.workload(workload).sizes
            if size is not None and size not in sizes:
                raise not_allowed("size", size, sorted(sizes), workload)
        elif size is not None:
            all_sizes = sorted({s for w in self._workloads.values() for s in w.sizes})
            if size not in all_sizes:
                raise not_allowed("size", size, all_sizes)
        if dtype is not None and dtype not in DTYPES:
            raise not_allowed("dtype", dtype, DTYPES)
        if gpu_type is not None:
            self.gpu(gpu_type)
        if scaling is not None and scaling not in SCALINGS:
            raise not_allowed("scaling", scaling, SCALINGS)

    def _no_rows(
        self,
        workload: str,
        size: str,
        dtype: str,
        gpu_type: str,
        scaling: str,
        source: str | None,
        release: str = DEFAULT_RELEASE,
    ) -> ConfigError:
        """Name the first key that has no rows, with the values that do."""
        steps: list[tuple[str, str, dict[str, Any]]] = [
            ("release", release, {"workload": workload, "size": size, "release": None}),
            ("dtype", dtype, {"workload": workload, "size": size, "release": release}),
            (
                "gpu_type",
                gpu_type,
                {"workload": workload, "size": size, "dtype": dtype, "release": release},
            ),
            (
                "scaling",
                scaling,
                {"workload": workload, "size": size, "dtype": dtype, "gpu_type": gpu_type,
                 "release": release},
            ),
        ]  # fmt: skip
        releases = {r.release for r in self.rows(workload, size, release=None)}
        for key, value, filters in steps:
            have = sorted({getattr(r, key) for r in self.rows(**filters)})
            if value not in have:
                context = " ".join(str(v) for k, v in filters.items() if k != "release")
                if key != "release" and (release != DEFAULT_RELEASE or len(releases) > 1):
                    context += f" in release {release}"
                error = not_allowed(key, value, have, context)
                elsewhere = {**filters, key: value, "release": None}
                others = sorted({r.release for r in self.rows(**elsewhere)} - {release})
                if key == "release" or not others:
                    return error
                return ConfigError(f"{error} (release {', '.join(others)} has {key} {value})")
        have = sorted(
            {r.source for r in self.rows(workload, size, dtype, gpu_type, scaling, True, release)}
        )
        return not_allowed("source", source, have, f"{workload} {size} {dtype} {gpu_type}")
