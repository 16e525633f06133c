"""NeMo 2 entry point: build the NeMo recipe for the spec and train in this process.

Run as ``python -m llmbench.ranks.entrypoints.nemo2 --spec run_spec.json`` or, inside a
container with the source mounted, through ``from_source.py``.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmbench.errors import LaunchError
from llmbench.ranks.entrypoints.common import (
    CPU_ONLY_FUSIONS_OFF,
    EntryOptions,
    apply_overrides,
    parse_args,
    pending_settings,
    pick,
)
from llmbench.ranks.step_clock import TELEMETRY_ENV

RECIPES = {
    ("llama3.1-nemo", "8b"): "llama31_8b",
    ("llama3.1-nemo", "70b"): "llama31_70b",
    ("llama3.1-nemo", "405b"): "llama31_405b",
    ("llama3.1-nemo", "405b-proxy"): "llama31_405b",  # fewer layers, set below
    ("nemotron4-nemo", "15b"): "nemotron4_15b",
    ("nemotron4-nemo", "340b"): "nemotron4_340b",
}
"""``nemo.collections.llm.<name>.pretrain_recipe`` per workload and size."""


SPECIAL = {"recipe_module", "performance_mode", "fp8_recipe", "tp_comm_overlap_cfg",
           "overlap_param_gather_with_optimizer_step", "data.num_train_samples"}  # fmt: skip
"""Parity recipe settings the entry point applies itself; every other one is a dotted path."""

FP8_RECIPES = {
    "delayed": "bf16_with_fp8_mixed",
    "current_scaling": "bf16_with_fp8_current_scaling_mixed",
}
"""``nemo.collections.llm.recipes.precision.mixed_precision`` function per FP8 recipe."""


@dataclass(frozen=True)
class NemoPlan:
    """Everything the entry point does to the recipe, as data."""

    recipe: str
    recipe_kwargs: dict[str, Any]
    overrides: dict[str, Any]
    fp8: bool = False
    fp8_recipe: str = "delayed"
    pipeline_bf16: bool = False
    profile_steps: tuple[int, int] | None = None
    checkpoint: dict[str, Any] = field(default_factory=dict)
    comm_overlap: dict[str, Any] = field(default_factory=dict)
    """MegatronCommOverlapCallback fields: ``tp_comm_overlap_cfg`` (a userbuffers config
    name) and ``overlap_param_gather_with_optimizer_step``."""
    tokenizer_vocab_size: int | None = None
    """``NullTokenizer(vocab_size)``: the model's real vocabulary, nothing downloaded."""


def _num_train_samples(rule: str, steps: int, spec: Any) -> int:
    """One epoch for the whole run, as the reference sizes the mock data."""
    factor = spec.global_batch_size * (spec.micro_batch_size if rule == "steps_x_gbs_x_mbs" else 1)
    return steps * factor


def plan(options: EntryOptions) -> NemoPlan:
    """Recipe name, its arguments and the dotted-path overrides for one run: the catalog
    row's parallelism and batch sizes, then the reference's settings for its document
    (``run_spec.json`` "parity", from ``catalog/parity.yaml``)."""
    spec = options.spec
    p = spec.parallelism
    strategy = "trainer.strategy."
    fallback = pick(RECIPES, spec, "nemo2")  # also rejects a size the catalog lacks
    recipe_settings = spec.parity.recipe
    overrides: dict[str, Any] = {
        "trainer.max_steps": options.max_steps,
        "trainer.limit_val_batches": 0.0,  # timing runs: no validation passes
        "trainer.val_check_interval": options.max_steps,
        "trainer.enable_checkpointing": options.save_checkpoint is not None,
        strategy + "tensor_model_parallel_size": p.get("tp", 1),
        strategy + "pipeline_model_parallel_size": p.get("pp", 1),
        strategy + "context_parallel_size": p.get("cp", 1),
        strategy + "virtual_pipeline_model_parallel_size": p.get("vp"),
        "data.micro_batch_size": spec.micro_batch_size,
        "data.global_batch_size": spec.global_batch_size,
        "data.seq_length": spec.seq_len,
        "model.config.seq_length": spec.seq_len,
    }
    if p.get("ep"):
        overrides[strategy + "expert_model_parallel_size"] = p["ep"]
    if spec.size.endswith("-proxy") and "layers" in spec.model:
        overrides["model.config.num_layers"] = spec.model["layers"]
    overrides.update({k: v for k, v in recipe_settings.items() if k not in SPECIAL})
    if "data.num_train_samples" in recipe_settings:
        rule = recipe_settings["data.num_train_samples"]
        overrides["data.num_train_samples"] = _num_train_samples(rule, options.max_steps, spec)
    logging = dict(spec.parity.logging)
    if options.save_checkpoint:
        logging.pop("log.ckpt", None)  # the checkpoint variant keeps the checkpoint callback
    overrides.update(logging)
    comm_overlap = {
        k: recipe_settings[k]
        for k in ("tp_comm_overlap_cfg", "overlap_param_gather_with_optimizer_step")
        if k in recipe_settings
    }
    if options.save_checkpoint or options.load_checkpoint:
        # The reference turns it off with checkpointing (it cannot save with it on).
        comm_overlap["overlap_param_gather_with_optimizer_step"] = False
    checkpoint: dict[str, Any] = {}
    if options.save_checkpoint:
        checkpoint["save_dir"] = options.save_checkpoint
        overrides["log.log_dir"] = options.save_checkpoint
    if options.load_checkpoint:
        checkpoint["load_dir"] = options.load_checkpoint
    kwargs: dict[str, Any] = {
        "name": spec.run_id,
        "dir": options.save_checkpoint or ".",
        "num_nodes": spec.nodes,
        "num_gpus_per_node": spec.gpus // spec.nodes,
    }
    if "performance_mode" in recipe_settings:
        kwargs["performance_mode"] = bool(recipe_settings["performance_mode"])
    null_tokenizer = spec.parity.tokenizer.get("null_tokenizer")
    return NemoPlan(
        recipe=recipe_settings.get("recipe_module", fallback),
        recipe_kwargs=kwargs,
        overrides=overrides,
        fp8=spec.dtype == "fp8",
        fp8_recipe=recipe_settings.get("fp8_recipe", "delayed"),
        pipeline_bf16=p.get("pp", 1) > 1,
        profile_steps=options.profile_steps,
        checkpoint=checkpoint,
        comm_overlap=comm_overlap,
        tokenizer_vocab_size=int(null_tokenizer["vocab_size"]) if null_tokenizer else None,
    )


def resolved(options: EntryOptions) -> dict[str, Any]:
    """What this entry point does to the recipe for the run, as data (``llmbench render``)."""
    pending = pending_settings(options.spec)
    return {**dataclasses.asdict(plan(options)), "decided_in_container": pending}


def _comm_overlap_index(callbacks: Sequence[Any]) -> int | None:
    # heavy optional dependency (in the training image or venv): imported only here
    from nemo.lightning.pytorch.callbacks.megatron_comm_overlap import MegatronCommOverlapCallback

    for index, callback in enumerate(callbacks or []):
        if getattr(callback, "__fn_or_cls__", None) is MegatronCommOverlapCallback:
            return index
    return None


def _userbuffers_config(name: str) -> Any:  # pragma: no cover - needs NeMo
    """A userbuffers config by name, as a serialisable ``run.Config`` (they are dataclasses)."""
    # heavy optional dependency (in the training image or venv): imported only here
    import fiddle as fdl
    import nemo_run as run
    from fiddle._src.experimental import dataclasses as fdl_dc
    from nemo.collections.llm.recipes.tp_overlap_configs import userbuffers

    return fdl.cast(run.Config, fdl_dc.convert_dataclasses_to_configs(getattr(userbuffers, name)))


def build_recipe(the_plan: NemoPlan) -> Any:  # pragma: no cover - needs NeMo
    # heavy optional dependency (in the training image or venv): imported only here
    import nemo_run as run
    import torch
    from nemo import lightning as nl
    from nemo.collections import llm
    from nemo.collections.common.tokenizers.null_tokenizer import NullTokenizer
    from nemo.collections.llm.recipes.precision import mixed_precision
    from nemo.lightning.pytorch.callbacks import NsysCallback

    recipe = getattr(llm, the_plan.recipe).pretrain_recipe(**the_plan.recipe_kwargs)
    if the_plan.fp8:
        # Before the overrides: the parity settings then adjust the new plugin.
        recipe.trainer.plugins = getattr(mixed_precision, FP8_RECIPES[the_plan.fp8_recipe])()
    apply_overrides(recipe, the_plan.overrides)
    if the_plan.tokenizer_vocab_size is not None:
        recipe.data.tokenizer = run.Config(NullTokenizer, vocab_size=the_plan.tokenizer_vocab_size)
    if the_plan.comm_overlap:
        index = _comm_overlap_index(recipe.trainer.callbacks)
        if index is None:
            raise LaunchError(f"{the_plan.recipe}: performance mode added no comm-overlap callback")
        callback = recipe.trainer.callbacks[index]
        for name, value in the_plan.comm_overlap.items():
            is_cfg = name == "tp_comm_overlap_cfg"
            setattr(callback, name, _userbuffers_config(value) if is_cfg else value)
    if the_plan.pipeline_bf16:
        recipe.trainer.strategy.pipeline_dtype = torch.bfloat16
    if the_plan.profile_steps:
        start, stop = the_plan.profile_steps
        callbacks = list(recipe.trainer.callbacks or [])
        callbacks.append(run.Config(NsysCallback, start_step=start, end_step=stop))
        recipe.trainer.callbacks = callbacks
    if os.environ.get(TELEMETRY_ENV):
        # the step window's energy needs the step clock (docs/telemetry.md); Lightning's
        # callback, so imported only here, where NeMo (and Lightning) are present
        from llmbench.ranks.entrypoints.lightning_clock import StepClock

        recipe.trainer.callbacks = [*(recipe.trainer.callbacks or []), run.Config(StepClock)]
    if "load_dir" in the_plan.checkpoint:
        recipe.resume = run.Config(
            nl.AutoResume,
            restore_config=run.Config(nl.RestoreConfig, path=the_plan.checkpoint["load_dir"]),
        )
    return recipe


def check_recipe(recipe: Any) -> str:  # pragma: no cover - needs NeMo
    """Validate ``recipe`` with NeMo's own code as far as a CPU allows; return it as YAML.

    Builds the trainer strategy and precision plugin, builds the model (config only: no
    weights before ``configure_model``), then hands the strategy's parallelism and the
    plugin's dtypes to the model config the way NeMo does at setup. Megatron-Core's config
    checks run there (heads divisible by TP, layers by PP x VP, pipeline dtype, ...), so
    an override NeMo or Megatron would reject raises here. The data module is serialized
    but not built: its tokenizer would be fetched from the network.
    """

    # heavy optional dependency (in the training image or venv): imported only here
    import fiddle as fdl
    from nemo.lightning._strategy_lib import set_model_parallel_attributes
    from nemo.lightning.pytorch.plugins.mixed_precision import update_config_with_dtype_overrides
    from nemo_run.core.serialization.yaml import YamlSerializer

    text = YamlSerializer().serialize(recipe)
    strategy = fdl.build(copy.deepcopy(recipe.trainer.strategy))
    plugins = recipe.trainer.plugins
    model_cfg = copy.deepcopy(recipe.model)
    optim_cfg = copy.deepcopy(recipe.optim)
    try:
        import transformer_engine  # noqa: F401
    except ImportError:
        for name in CPU_ONLY_FUSIONS_OFF:
            setattr(model_cfg.config, name, False)
        # The precision-aware optimizer is Transformer Engine's FusedAdam.
        optim_cfg.config.use_precision_aware_optimizer = False
    model = fdl.build(model_cfg)
    if plugins is not None:
        precision = fdl.build(copy.deepcopy(plugins))
        model.config = update_config_with_dtype_overrides(precision.dtype_config, model.config)
    set_model_parallel_attributes(model, strategy.parallelism)
    fdl.build(optim_cfg)
    return text


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - needs NeMo
    options = parse_args(argv, "llmbench.ranks.entrypoints.nemo2", can_check=True)
    the_plan = plan(options)  # before the heavy import: a bad spec fails fast
    # heavy optional dependency (in the training image or venv): imported only here
    import nemo_run as run

    recipe = build_recipe(the_plan)
    if options.check_only:
        Path(options.check_only).write_text(check_recipe(recipe))
        return
    # direct=True: train in this process on the ranks srun started, no new submission.
    run.run(recipe, direct=True)


if __name__ == "__main__":
    main()
