"""What the v26.08 reference image has and the CPU check's Python 3.11 venv lacks, each
stood in for as little as building and validating a config needs (the Megatron-Bridge 0.5
check, tests/nemo/check_mbridge.py). Nothing here changes the library's code or values:

- ``typing.override`` is new in Python 3.12 (PEP 698) and three modules of Megatron-Core 0.18
  and Megatron-Bridge 0.5 import it; ``typing_extensions.override`` is the same decorator
  for older Pythons (it only marks the method).
- NVRx: Megatron-Core 0.18 asserts nvidia-resiliency-ext >= 0.6.0 as soon as it is importable;
  the NeMo 2 venv's is 0.4.1 and no 0.6 build is published. It is hidden (not importable):
  Megatron-Core then uses its own asynchronous checkpoint path; a config does not change.
- Transformer Engine: the image's 2.16 is GPU-only. A stand-in makes its names importable
  and subclassable (Megatron-Bridge's PEFT layers subclass ``te.Linear`` at import), reports
  the image's version to the libraries' version checks and gives ``FusedAdam`` its keyword
  arguments (the precision-aware optimizer check reads them:
  TE:transformer_engine/pytorch/optimizers/fused_adam.py@v2.16#L111-130). Building or
  calling anything of it raises.
- The GPU: the MoE recipes and ``validate()`` ask ``torch.cuda.get_device_properties`` which
  dispatcher the GPU can run; a case answers for its row's GPU type (``GPUS``).
- The Hugging Face Hub: the recipes read their model's ``config.json``
  (``AutoBridge.from_hf_pretrained``); ``hf_configs.json`` beside this file holds the five
  the v26.08 rows use, written into a local cache (``write_hf_cache``), read offline.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import inspect
import json
import os
import sys
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

HF_CONFIGS = Path(__file__).with_name("hf_configs.json")


class Gpu(NamedTuple):
    """What ``torch.cuda.get_device_properties`` reports that the library reads."""

    name: str
    major: int
    minor: int


GPUS = {
    "h100": Gpu("NVIDIA H100 80GB HBM3", 9, 0),
    "b200": Gpu("NVIDIA B200", 10, 0),
    "gb200": Gpu("NVIDIA GB200", 10, 0),
    "b300": Gpu("NVIDIA B300 SXM6 AC", 10, 3),
    "gb300": Gpu("NVIDIA GB300", 10, 3),
}
"""Each GPU type's device name and compute capability (NVIDIA's CUDA GPU compute capability
table: Hopper 9.0, Blackwell B200/GB200 10.0, Blackwell Ultra B300/GB300 10.3)."""


def backport_typing_override() -> None:
    import typing

    import typing_extensions

    if not hasattr(typing, "override"):  # Python < 3.12
        typing.override = typing_extensions.override  # type: ignore[attr-defined]


def hide_nvrx() -> None:
    sys.modules["nvidia_resiliency_ext"] = None  # type: ignore[assignment]  # import fails


class _Named(type):
    """A Transformer Engine name: any attribute is another such name, so ``te.common.recipe.
    DelayedScaling`` can be subclassed; an instance cannot be made."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _Named(name, (_Placeholder,), {"__module__": cls.__module__})
        setattr(cls, name, value)
        return value


class _Placeholder(metaclass=_Named):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            f"{type(self).__module__}.{type(self).__qualname__}: Transformer Engine stand-in "
            "(the CPU check builds configs; nothing of Transformer Engine can run here)"
        )


def _fused_adam_signature() -> inspect.Signature:
    """FusedAdam's arguments in Transformer Engine 2.16 (the citation above)."""
    p = inspect.Parameter
    names = ("params", "lr", "betas", "eps", "weight_decay", "amsgrad")
    keywords = (
        "bias_correction", "adam_w_mode", "capturable", "master_weights",
        "master_weight_dtype", "exp_avg_dtype", "exp_avg_sq_dtype", "use_decoupled_grad",
        "store_param_remainders", "set_grad_none",
    )  # fmt: skip
    return inspect.Signature(
        [p(n, p.POSITIONAL_OR_KEYWORD) for n in names] + [p(n, p.KEYWORD_ONLY) for n in keywords]
    )


class _Module(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _Named(name, (_Placeholder,), {"__module__": self.__name__})
        if name == "FusedAdam":
            value.__signature__ = _fused_adam_signature()
        setattr(self, name, value)
        return value


class _TransformerEngine(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    ROOTS = ("transformer_engine", "transformer_engine_torch")

    def __init__(self, version: str) -> None:
        self.version = version

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name.split(".")[0] in self.ROOTS:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _Module(spec.name)
        module.__path__ = []
        if spec.name == "transformer_engine":
            module.__version__ = self.version
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def stand_in_transformer_engine(version: str) -> None:
    sys.meta_path.insert(0, _TransformerEngine(version))


def install(te_version: str) -> None:
    """Everything above that is process-wide, before Megatron is first imported."""
    backport_typing_override()
    hide_nvrx()
    stand_in_transformer_engine(te_version)


@contextlib.contextmanager
def on_row(gpu_type: str, env: Mapping[str, str]) -> Iterator[None]:
    """While one case is built: the row's GPU answers ``torch.cuda``'s device questions,
    and the environment is the row's launch environment (``validate()`` reads some of it)."""
    import torch

    gpu = GPUS[gpu_type]
    saved_env = dict(os.environ)
    saved = {
        n: getattr(torch.cuda, n)
        for n in ("get_device_properties", "get_device_capability", "get_device_name")
    }
    torch.cuda.get_device_properties = lambda device=None: gpu
    torch.cuda.get_device_capability = lambda device=None: (gpu.major, gpu.minor)
    torch.cuda.get_device_name = lambda device=None: gpu.name
    os.environ.update(env)
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(torch.cuda, name, function)
        os.environ.clear()
        os.environ.update(saved_env)


def write_hf_cache(hf_home: Path) -> None:
    """The model configs of ``hf_configs.json`` as the Hub's cache layout under
    ``hf_home`` (``HF_HOME``), read with ``HF_HUB_OFFLINE=1``."""
    revision = "0" * 40  # one local snapshot per model
    for repo, entry in json.loads(HF_CONFIGS.read_text())["models"].items():
        folder = hf_home / "hub" / ("models--" + repo.replace("/", "--"))
        (folder / "refs").mkdir(parents=True, exist_ok=True)
        (folder / "refs" / "main").write_text(revision)
        snapshot = folder / "snapshots" / revision
        snapshot.mkdir(parents=True, exist_ok=True)
        (snapshot / "config.json").write_text(json.dumps(entry["config"], indent=2))
