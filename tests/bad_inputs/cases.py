"""The bad configs of the suite, as data: each case is a config file's bytes (or a path
that is not a plain file) and the words its one error line must contain (the key or file,
and the value)."""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

BASE: dict[str, Any] = {
    "sweeps": [
        {
            "workload": "tiny-llama",
            "sizes": ["tiny"],
            "dtypes": ["fp32"],
            "gpu_type": "cpu",
            "scales": [1],
        }
    ],
    "steps": 50,
    "window": [35, 44],
}
NEMO = {"workload": "llama3.1-nemo", "sizes": ["8b"], "dtypes": ["bf16"], "gpu_type": "h100"}


@dataclass(frozen=True)
class ConfigCase:
    id: str
    # the file's bytes, or a function that makes the path in a folder (a FIFO, a folder...)
    content: bytes | Callable[[Path], Path]
    needles: tuple[str, ...] = ()  # words of the error line; empty: the config is accepted
    overrides: dict[str, Any] = field(default_factory=dict)  # the workflow's --config

    @property
    def accepted(self) -> bool:
        return not self.needles

    def write(self, folder: Path) -> Path:
        if callable(self.content):
            return self.content(folder)
        path = folder / "config.yaml"
        path.write_bytes(self.content)
        return path


def dump(config: dict[str, Any]) -> bytes:
    return yaml.safe_dump(config, sort_keys=False).encode()


def with_value(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """``BASE`` with the value at ``path`` (keys and list indexes) replaced."""
    config = copy.deepcopy(BASE)
    node: Any = config
    for part in path[:-1]:
        node = node.setdefault(part, {}) if isinstance(node, dict) else node[part]
    node[path[-1]] = value
    return config


def key_name(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


# Every count and size of the schema, with a value of each wrong kind: not finite, a float
# where a whole number is meant, above the documented bound, below it, a string, a bool.
NUMERIC_KEYS: dict[tuple[Any, ...], Any] = {
    ("steps",): 10**7,
    ("window", 0): 10**7,
    ("window", 1): 10**7,
    ("total_tokens",): 1e19,
    ("runtime_min",): 10**6,
    ("watchdog", "startup_s"): 10**7,
    ("watchdog", "stall_s"): 10**7,
    ("ranks_per_node",): 10**5,
    ("threads_per_rank",): 10**5,
    ("reference", "tolerance"): 11,
    ("failures", "infra_retries"): 1000,
    ("history", "trend_days"): 10**6,
    ("slurm", "segment"): 10**7,
    ("sweeps", 0, "scales", 0): 10**6,
    ("sweeps", 0, "runtime_min"): 10**6,
}
FLOAT_KEYS = {("total_tokens",), ("reference", "tolerance")}


def _numeric_cases() -> list[ConfigCase]:
    cases = []
    for path, too_big in NUMERIC_KEYS.items():
        key = key_name(path)
        values: list[tuple[str, Any, str]] = [
            ("nan", math.nan, "nan"),
            ("inf", math.inf, "inf"),
            ("neg-inf", -math.inf, "-inf"),
            ("too-big", too_big, str(too_big)),
            ("negative", -3, "-3"),
            ("string", "lots", "'lots'"),
            ("bool", True, "True"),
        ]
        if path not in FLOAT_KEYS:
            values.append(("float", 8.0, "8.0"))
        cases += [
            ConfigCase(f"{key}-{name}", dump(with_value(path, value)), (key, text))
            for name, value, text in values
        ]
    return cases


def _fifo(folder: Path) -> Path:
    path = folder / "config.yaml"
    os.mkfifo(path)
    return path


def _folder(folder: Path) -> Path:
    path = folder / "config.yaml"
    path.mkdir()
    return path


def _missing(folder: Path) -> Path:
    return folder / "config.yaml"


def _loop(folder: Path) -> Path:
    path = folder / "config.yaml"
    path.symlink_to(path)
    return path


def sweep(**changes: Any) -> dict[str, Any]:
    return {**BASE, "sweeps": [{**BASE["sweeps"][0], **changes}]}


def nemo(**top: Any) -> dict[str, Any]:
    return {**BASE, "sweeps": [{**NEMO, "scales": [8]}], **top}


def _long(template: str) -> Callable[[Path], Path]:
    """A config with a 1,000,000-character value ``{x}`` (written when the case runs)."""

    def write(folder: Path) -> Path:
        path = folder / "config.yaml"
        path.write_text(template.replace("{x}", "x" * 1_000_000))
        return path

    return write


def long_sweep(w: str, s: str) -> str:
    sweep = f"{{workload: {w}, sizes: [{s}], dtypes: [fp32], gpu_type: cpu, scales: [1]}}"
    return f"sweeps: [{sweep}]\n"


FILE_CASES = [
    ConfigCase("binary", b"\xff\xfe\x00\x01\x89PNG", ("config.yaml", "0xff")),
    ConfigCase("binary-late", dump(BASE) + b"# \xc3\x28\n", ("config.yaml", "line 14")),
    ConfigCase("nul-byte", dump(BASE) + b"\x00", ("config.yaml", "#x0000")),
    ConfigCase("duplicate-top", dump(BASE) + b"steps: 60\n", ("line 14", "'steps'", "line 10")),
    ConfigCase(
        "duplicate-nested",
        dump(BASE) + b"watchdog: {stall_s: 5, stall_s: 6}\n",
        ("line 14", "'stall_s'"),
    ),
    ConfigCase("syntax-flow", dump(BASE) + b"steps: [1, 2\n", ("line 15", "column 1")),
    ConfigCase("syntax-indent", b"sweeps:\n  - a: 1\n   b: 2\n", ("line 3", "column 4")),
    ConfigCase("syntax-tab", b"sweeps:\n\t- 1\n", ("line 2", "column 1")),
    ConfigCase("empty", b"", ("config.yaml", "empty")),
    ConfigCase("comment-only", b"# nothing\n", ("config.yaml", "empty")),
    ConfigCase("top-list", b"- 1\n- 2\n", ("config.yaml", "list")),
    ConfigCase("top-string", b"hello\n", ("config.yaml", "str")),
    ConfigCase("fifo", _fifo, ("config.yaml", "not a regular file")),
    ConfigCase("folder", _folder, ("config.yaml", "not a regular file")),
    ConfigCase("missing", _missing, ("config.yaml", "No such file")),
    ConfigCase("symlink-loop", _loop, ("config.yaml", "symbolic links")),
    ConfigCase(
        "long-workload",
        _long(long_sweep(w="{x}", s="tiny")),
        ("workload", "[1000002 chars]"),
    ),
    ConfigCase(
        "long-size",
        _long(long_sweep(w="tiny-llama", s="{x}")),
        ("sizes", "[1000002 chars]"),
    ),
    ConfigCase(
        "long-key",
        _long(long_sweep(w="tiny-llama", s="tiny") + "{x}: 1\n"),
        ("line 2", "column 1000001"),
    ),
    ConfigCase("multiline-value", dump(sweep(workload="a\nb\nc")), ("workload", "'a\\nb\\nc'")),
    ConfigCase("anchors", b"a: &a [1]\nb: &b [*a, *a]\nsweeps: *b\n", ("(top level)", "'a', 'b'")),
]

CROSS_CASES = [
    ConfigCase("unknown-key", dump({**BASE, "stepz": 5}), ("stepz", "allowed keys")),
    ConfigCase("bad-workload", dump(sweep(workload="gpt5")), ("workload", "'gpt5'")),
    ConfigCase("bad-dtype", dump(sweep(dtypes=["fp4"])), ("dtypes[0]", "'fp4'")),
    ConfigCase("bad-gpu", dump(sweep(gpu_type="a100")), ("gpu_type", "'a100'")),
    ConfigCase("bad-variant", dump(sweep(variants=["fast"])), ("variants[0]", "'fast'")),
    ConfigCase("no-sweeps", dump({"steps": 50}), ("(top level)", "'sweeps'")),
    ConfigCase("empty-sweeps", dump({**BASE, "sweeps": []}), ("sweeps", "[]")),
    ConfigCase("scales-empty", dump(sweep(scales=[])), ("scales", "[]")),
    ConfigCase("scales-dup", dump(sweep(scales=[1, 1])), ("scales", "[1, 1]")),
    ConfigCase("scales-zero", dump(sweep(scales=[0])), ("scales[0]", "0")),
    ConfigCase("scales-many", dump(sweep(scales=list(range(1, 102)))), ("scales", "101")),
    ConfigCase("size-not-tiny", dump(sweep(sizes=["8b"])), ("sizes", "8b")),
    ConfigCase("tiny-on-gpu", dump(sweep(gpu_type="h100")), ("gpu_type", "h100")),
    ConfigCase("window-reversed", dump({**BASE, "window": [44, 35]}), ("window", "[44, 35]")),
    ConfigCase("window-short", dump({**BASE, "window": [35]}), ("window", "[35]")),
    ConfigCase("steps-below-window", dump({**BASE, "steps": 40}), ("steps", "40")),
    ConfigCase(
        "local-ranks",
        dump(sweep(scales=[100_000])),
        ("cpux100000", "launcher: local"),
    ),
    ConfigCase(
        "local-threads",
        dump({**sweep(scales=[16]), "threads_per_rank": 1000}),
        ("threads_per_rank=1000", "launcher: local"),
    ),
    ConfigCase(
        "local-ranks-per-node",
        dump({**sweep(scales=[4096]), "ranks_per_node": 1}),
        ("cpux4096", "4096 CPU ranks"),
    ),
    ConfigCase("launcher", dump({**BASE, "launcher": "mpirun"}), ("launcher", "'mpirun'")),
    ConfigCase("container", dump({**BASE, "container": "docker"}), ("container", "'docker'")),
    ConfigCase(
        "image-container-none",
        dump({**BASE, "images": {"llama3.1-nemo": "NOT AN IMAGE"}}),
        ("images.llama3.1-nemo", "'NOT AN IMAGE'"),
    ),
    ConfigCase(
        "image-no-tag",
        dump({**BASE, "images": {"llama2-maxtext": "nvidia/jax"}}),
        ("images.llama2-maxtext", "'nvidia/jax'"),
    ),
    ConfigCase(
        "image-unknown-workload",
        dump({**BASE, "images": {"gpt5": "a/b:c"}}),
        ("images", "'gpt5'"),
    ),
    ConfigCase(
        "ckpt-load-alone",
        dump(nemo(sweeps=[{**NEMO, "scales": [8], "variants": ["ckpt-load"]}])),
        ("ckpt-load", "ckpt-save"),
    ),
    ConfigCase(
        "venv-missing",
        dump(nemo(setup={"venv_requirements": "envs/nope.txt"})),
        ("setup.venv_requirements", "'envs/nope.txt'"),
    ),
    ConfigCase(
        "reference-missing",
        dump({**BASE, "reference": {"file": "nope.parquet"}}),
        ("reference.file", "'nope.parquet'"),
    ),
    ConfigCase(
        "reference-suffix",
        dump({**BASE, "reference": {"file": "config.yaml.bak"}}),
        ("reference.file", "'config.yaml.bak'"),
    ),
    ConfigCase("registry", dump({**BASE, "registry": "a b"}), ("registry", "'a b'")),
    ConfigCase(
        "slurm-injection",
        dump({**BASE, "slurm": {"reservation": "x; rm -rf /"}}),
        ("slurm.reservation", "'x; rm -rf /'"),
    ),
    ConfigCase(
        "profile-ranks", dump({**BASE, "profile": {"ranks": "0-"}}), ("profile.ranks", "'0-'")
    ),
    ConfigCase(
        "override-float",
        dump(BASE),
        ("steps", "50.0"),
        overrides={"steps": 50.0},
    ),
    ConfigCase(
        "override-nan",
        dump(BASE),
        ("total_tokens", "nan"),
        overrides={"total_tokens": math.nan},
    ),
]


def _reference_file(folder: Path) -> Path:
    (folder / "ref.csv").write_text("workload,size,dtype,gpu_type,gpus,step_time_s\n")
    path = folder / "config.yaml"
    path.write_bytes(dump({**BASE, "reference": {"file": "ref.csv"}}))
    return path


PAIR = ["ckpt-save", "ckpt-load"]
IMAGE = "nvcr.io/nvidia/nemo:25.09"
ACCEPTED = [
    ConfigCase("base", dump(BASE)),
    ConfigCase("tiny-two-ranks", dump(sweep(scales=[1, 2]))),
    ConfigCase("nemo-8b", dump(nemo())),
    ConfigCase("ckpt-pair", dump(nemo(sweeps=[{**NEMO, "scales": [8], "variants": PAIR}]))),
    ConfigCase("image-ok", dump({**BASE, "images": {"llama3.1-nemo": IMAGE}})),
    ConfigCase("reference-file", _reference_file),
    ConfigCase("bounds-max", dump({**BASE, "steps": 1_000_000, "total_tokens": 1e18})),
    ConfigCase("float-tokens", dump({**BASE, "total_tokens": 1e12})),
    ConfigCase("override-ok", dump(BASE), overrides={"steps": 60}),
]

REJECTED = _numeric_cases() + FILE_CASES + CROSS_CASES
ALL = REJECTED + ACCEPTED
