"""Run with the NeMo venv's interpreter: our NeMo 2 recipe next to the reference's, per run.

``python reference_nemo2.py cases.json results.jsonl``: each case is ``{"spec": path,
"drop": [setting names]}``. For each, the entry point's recipe is built (with the named
parity settings dropped from the spec: the mutation tests) and, independently, the
recipe the reference builds for that run, written here from the reference's code as the
audit records it (NVIDIA/dgxc-benchmarking llama3.1/pretrain_llama31.py @v25.04.02,
NVIDIA/NeMo scripts/performance utils.py @d2b2155 and helpers.py @1f422a1), not from
llmbench's parity data. Both are serialised with NeMo-Run and compared field by field.
One JSON line per case: run id, dropped names, the differing fields, and the facts the
test ties (the model's built vocabulary, the stdout step line settings).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from llmbench.ranks.entrypoints import nemo2
from llmbench.ranks.entrypoints.common import EntryOptions, decide_requirements, read_spec

HF_LLAMA3_VOCAB = 128256
"""len(AutoTokenizer('meta-llama/Meta-Llama-3-8B')): the reference's Llama tokenizer."""
IGNORED = {"log.log_dir"}
"""Paths that say where files go, not how fast a step runs."""


def reference_recipe(spec: Any) -> tuple[Any, int]:
    """The reference's recipe for the run and the vocabulary its tokenizer reports."""
    import fiddle as fdl
    import nemo_run as run
    import torch
    from fiddle._src.experimental import dataclasses as fdl_dc
    from nemo.collections import llm
    from nemo.collections.common.tokenizers.null_tokenizer import NullTokenizer
    from nemo.collections.llm.recipes.precision import mixed_precision as mp
    from nemo.collections.llm.recipes.tp_overlap_configs import userbuffers as ub
    from nemo.lightning.pytorch.callbacks.megatron_comm_overlap import MegatronCommOverlapCallback

    p = spec.parallelism
    tp, pp, cp = p["tp"] or 1, p["pp"] or 1, p["cp"] or 1
    vp = p.get("vp")
    dp = spec.gpus // (tp * pp * cp)
    steps, gbs, mbs = spec.steps, spec.global_batch_size, spec.micro_batch_size
    llama = spec.workload == "llama3.1-nemo"
    newer = spec.model["source"].startswith("nemotron4-340b")
    blackwell = spec.gpu_type in ("b200", "gb200", "gb300")
    if llama:  # pretrain_llama31.py L32-34: llama3 8b/70b modules, llama31 405b
        module = {"8b": llm.llama3_8b, "70b": llm.llama3_70b}.get(spec.size, llm.llama31_405b)
    else:
        module = {"15b": llm.nemotron4_15b, "340b": llm.nemotron4_340b}[spec.size]
    recipe = module.pretrain_recipe(
        name=spec.run_id,
        dir=".",
        num_nodes=spec.nodes,
        num_gpus_per_node=spec.gpus_per_node,
        performance_mode=True,
    )
    # set_primary_perf_configs
    recipe.trainer.max_steps = steps
    recipe.trainer.val_check_interval = steps
    recipe.trainer.limit_val_batches = 0.0
    recipe.trainer.enable_checkpointing = False
    recipe.data.micro_batch_size, recipe.data.global_batch_size = mbs, gbs
    # pretrain_llama31.py L125, pretrain_nemotron4_*.py@d2b2155 L75/L77: x MBS (older
    # documents); helpers.py@1f422a1 L395-396: steps x GBS (the newer 340B document)
    recipe.data.num_train_samples = steps * gbs * (1 if newer else mbs)
    strategy = recipe.trainer.strategy
    strategy.tensor_model_parallel_size = tp
    strategy.pipeline_model_parallel_size = pp
    strategy.context_parallel_size = cp
    strategy.virtual_pipeline_model_parallel_size = None if vp in (None, 1) else vp
    strategy.sequence_parallel = tp > 1
    if pp > 1:
        strategy.pipeline_dtype = torch.bfloat16
    # The model config's default, written out so the serialised forms compare.
    recipe.model.config.seq_length = recipe.data.seq_length
    if spec.size.endswith("-proxy"):
        recipe.model.config.num_layers = spec.model["layers"]
    callback = next(
        c for c in recipe.trainer.callbacks if c.__fn_or_cls__ is MegatronCommOverlapCallback
    )
    callback.overlap_param_gather_with_optimizer_step = dp > 1 and pp > 1 and (vp or 1) > 1
    # set_exp_logging_configs / pretrain_llama31.py L155-158: every step, no TensorBoard
    recipe.log.tensorboard = None
    recipe.trainer.logger = False
    recipe.log.ckpt = None
    recipe.trainer.log_every_n_steps = 1
    if spec.dtype == "fp8":
        if newer:  # -fr cs, first/last layers not in BF16
            recipe.trainer.plugins = mp.bf16_with_fp8_current_scaling_mixed()
            recipe.trainer.plugins.first_last_layers_bf16 = False
        else:
            recipe.trainer.plugins = mp.bf16_with_fp8_mixed()
        recipe.trainer.plugins.grad_reduce_in_fp32 = False
    if llama and spec.size != "8b":
        shape = "h8192_tp4" if spec.size == "70b" else "h16384_tp8_cp2"
        cfg = getattr(ub, f"userbuffers_{spec.dtype}_{spec.gpu_type}_{shape}_mbs1_seqlen8192")
        callback.tp_comm_overlap_cfg = fdl.cast(
            run.Config, fdl_dc.convert_dataclasses_to_configs(cfg)
        )
    if newer and spec.gpu_type in ("b200", "gb200"):  # pretrain_nemotron4_340b.py L114-122
        cfg = getattr(ub, f"userbuffers_{spec.dtype}_b200_h18432_tp8_mbs1_seqlen4096")
        callback.tp_comm_overlap_cfg = fdl.cast(
            run.Config, fdl_dc.convert_dataclasses_to_configs(cfg)
        )
    if newer and blackwell:  # launch.sh L107,118: CUDA graphs on Blackwell
        # enable_cuda_graph in the reference's Megatron-Core (0.13/0.14); this venv's 0.15
        # spells the same switch cuda_graph_impl="local"
        recipe.model.config.cuda_graph_impl = "local"
        strategy.use_te_rng_tracker = True
    else:
        recipe.model.config.enable_cuda_graph = False
        strategy.use_te_rng_tracker = False
    if newer:  # helpers.py@1f422a1 L213, 316, 341-342
        recipe.model.config.cross_entropy_fusion_impl = "te"
        strategy.ddp.check_for_nan_in_grad = False
        strategy.ddp.check_for_large_grads = False
        if spec.dtype == "bf16":
            recipe.optim.config.use_precision_aware_optimizer = True
    if llama:
        # The HF tokenizer cannot be downloaded here: its size is the fact compared.
        return recipe, HF_LLAMA3_VOCAB
    recipe.data.tokenizer = run.Config(NullTokenizer, vocab_size=256000)
    return recipe, 256000 + 1


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    if isinstance(node, list):
        out = {}
        for index, value in enumerate(node):
            out.update(flatten(value, f"{prefix}{index}."))
        return out
    return {prefix[:-1]: node}


def serialised(recipe: Any) -> dict[str, Any]:
    from nemo_run.core.serialization.yaml import YamlSerializer

    data = yaml.safe_load(YamlSerializer().serialize(recipe))
    data.get("data", {}).pop("tokenizer", None)  # compared as its vocabulary size
    return {k: v for k, v in flatten(data).items() if k not in IGNORED}


def built_vocab(recipe: Any, tokenizer_vocab: int) -> int:
    """The padded vocabulary NeMo builds the model with (GPTConfig.configure_model)."""
    import copy

    import fiddle as fdl
    from nemo.lightning.base import get_vocab_size

    config_cfg = copy.deepcopy(recipe.model.config)
    for name in nemo2.CPU_ONLY_FUSIONS_OFF:  # need Transformer Engine kernels; no vocab effect
        setattr(config_cfg, name, False)
    config = fdl.build(config_cfg)
    config.tensor_model_parallel_size = recipe.trainer.strategy.tensor_model_parallel_size
    return get_vocab_size(config, tokenizer_vocab, config.make_vocab_size_divisible_by)


def ours(spec: Any) -> tuple[Any, int]:
    import fiddle as fdl

    # as the entry point's argument parsing does in the rank's environment
    recipe = nemo2.build_recipe(nemo2.plan(EntryOptions(decide_requirements(spec))))
    tokenizer = recipe.data.tokenizer
    vocab = fdl.build(tokenizer).vocab_size if tokenizer is not None else -1
    return recipe, vocab


def step_line(recipe: Any) -> dict[str, Any]:
    """What decides the stdout step line: the strategy's progress printer and interval."""
    import copy

    import fiddle as fdl

    strategy = fdl.build(copy.deepcopy(recipe.trainer.strategy))
    return {
        "replace_progress_bar": strategy.replace_progress_bar,
        "progress_interval": strategy.progress_interval,
        "log_every_n_steps": recipe.trainer.log_every_n_steps,
        "enable_progress_bar": getattr(recipe.trainer, "enable_progress_bar", None),
    }


def main(cases_file: str, results_file: str) -> None:
    cases = json.loads(Path(cases_file).read_text())
    with open(results_file, "w") as out:
        for case in cases:
            spec = read_spec(case["spec"])
            drop = set(case.get("drop", []))
            if drop:
                kept = tuple(s for s in spec.parity.settings if s.name not in drop)
                parity = dataclasses.replace(spec.parity, settings=kept)
                spec = dataclasses.replace(spec, parity=parity)
            ref, ref_vocab = reference_recipe(spec)
            b = serialised(ref)
            try:
                mine, my_vocab = ours(spec)
            except Exception as exc:  # a mutation may make our build refuse: a difference
                out.write(
                    json.dumps(
                        {
                            "run_id": spec.run_id,
                            "drop": sorted(drop),
                            "n_diff": 1,
                            "diff": {"build": str(exc)[:300]},
                        }
                    )
                    + "\n"
                )
                continue
            a = serialised(mine)
            diff = sorted(
                k for k in a.keys() | b.keys() if a.get(k, "<absent>") != b.get(k, "<absent>")
            )
            if my_vocab != ref_vocab:
                diff.append("data.tokenizer.vocab_size")
            result = {
                "run_id": spec.run_id,
                "drop": sorted(drop),
                "diff": {k: [a.get(k, "<absent>"), b.get(k, "<absent>")] for k in diff[:20]},
                "n_diff": len(diff),
                "built_vocab": built_vocab(mine, my_vocab) if my_vocab > 0 else None,
                "step_line": step_line(mine),
            }
            out.write(json.dumps(result, default=str) + "\n")
            out.flush()


if __name__ == "__main__":
    main(*sys.argv[1:3])
