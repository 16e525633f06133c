"""MaxText entry point: ``train.py`` with key=value overrides, in this process, after the
reference's profile-guided (PGLE) pass where the parity data asks for one."""

from __future__ import annotations

import dataclasses
import os
import runpy
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmbench.core.run_folder import PGLE_DIR
from llmbench.errors import LaunchError
from llmbench.ranks.entrypoints.common import EntryOptions, parse_args, pick

MODELS = {("llama2-maxtext", "70b"): "llama2-70b"}
"""MaxText ``model_name`` per workload and size."""

TRAIN_PY = "/opt/maxtext/MaxText/train.py"
BASE_CONFIG = "/opt/maxtext/MaxText/configs/base.yml"
"""Where the image keeps MaxText, absolute: srun's working directory is the attempt folder
(the parity data names the reference's paths; these are the fallback)."""

SPECIAL = {"xla_combine_divisors", "train_py", "base_config", "pgle"}
"""Parity recipe settings that are not MaxText config keys (launch.sh or here use them)."""


def config_overrides(options: EntryOptions) -> dict[str, Any]:
    """MaxText config keys for one run.

    FSDP spans the GPUs of a node over ICI (NVLink) and the nodes over DCN; data
    parallelism, where the recipe has any, is across nodes.
    """
    spec = options.spec
    p = spec.parallelism
    per_node = spec.gpus // spec.nodes
    fsdp = int(p.get("fsdp") or 1) if not isinstance(p.get("fsdp"), bool) else spec.gpus
    if fsdp < 1 or fsdp * int(p.get("dp") or 1) != spec.gpus:
        raise LaunchError(
            f"run {spec.run_id}: fsdp={fsdp} x dp={p.get('dp')} must equal gpus={spec.gpus}"
        )
    ici_fsdp = min(fsdp, per_node)
    out: dict[str, Any] = {
        "model_name": MODELS[(spec.workload, spec.size)],
        "run_name": spec.run_id,
        "base_output_directory": options.save_checkpoint or "maxtext-output",
        "steps": options.max_steps,
        "per_device_batch_size": spec.micro_batch_size,
        "max_target_length": spec.seq_len,
        "dataset_type": "synthetic",
        "ici_fsdp_parallelism": ici_fsdp,
        "dcn_fsdp_parallelism": fsdp // ici_fsdp,
        "ici_data_parallelism": per_node // ici_fsdp,
        "dcn_data_parallelism": spec.nodes // (fsdp // ici_fsdp),
        "ici_tensor_parallelism": p.get("tp", 1),
        "enable_checkpointing": bool(options.save_checkpoint or options.load_checkpoint),
    }
    if spec.dtype == "fp8":
        out["quantization"] = "fp8"
    # The reference's config keys for the document (catalog/parity.yaml).
    recipe = spec.parity.recipe
    out.update({k: v for k, v in recipe.items() if k not in SPECIAL})
    if options.profile_steps:
        start, stop = options.profile_steps
        out.update(profiler="nsys", skip_first_n_steps_for_profiler=start,
                   profiler_steps=stop - start + 1)  # fmt: skip
    if options.save_checkpoint:
        out["checkpoint_period"] = options.max_steps
    if options.load_checkpoint:
        out["load_full_state_path"] = options.load_checkpoint
    return out


def paths(options: EntryOptions) -> tuple[str, str]:
    """MaxText's ``train.py`` and base config inside the image."""
    recipe = options.spec.parity.recipe
    return recipe.get("train_py", TRAIN_PY), recipe.get("base_config", BASE_CONFIG)


def argv_for(options: EntryOptions) -> list[str]:
    """``train.py``'s argv: the script, base config, then ``key=value`` overrides."""
    pick(MODELS, options.spec, "maxtext")
    return [*paths(options)] + [
        f"{k}={str(v).lower() if isinstance(v, bool) else v}"
        for k, v in config_overrides(options).items()
    ]


"""In the attempt folder: the profile pass's log, rank 0's Nsight report, the schedule."""
LHS_ON = "--xla_gpu_enable_latency_hiding_scheduler=true"


@dataclass(frozen=True)
class PglePass:
    """The reference's two-pass launch (DGXC:maxtext/configure.sh@v25.01 L174-221): a short
    profiled run with the latency-hiding scheduler and async collectives off, Nsight's
    report turned into a latency profile (rank 0), then the measured run scheduled with it."""

    profile_argv: list[str]
    profile_xla_flags: str
    converter_argv: list[str]
    perf_xla_flags: str
    report: str


def pgle_pass(options: EntryOptions, rank: int, xla_flags: str) -> PglePass | None:
    """The commands of the PGLE pass for ``rank``; None where the reference runs none."""
    pgle = options.spec.parity.recipe.get("pgle")
    if not pgle or options.profile_steps:  # a profile run is already under nsys
        return None
    argv = argv_for(options)
    keep = [a for a in argv[2:] if a.split("=", 1)[0] not in PROFILE_KEYS]
    run_name = options.spec.run_id + "-prof"
    profile = [*argv[:2], f"run_name={run_name}", f"steps={pgle['steps']}", *keep,
               "profiler=nsys", f"skip_first_n_steps_for_profiler={pgle['skip_steps']}",
               f"profiler_steps={pgle['profiler_steps']}"]  # fmt: skip
    # Only rank 0's report is converted; the others profile too (one distributed run).
    report = f"{PGLE_DIR}/profile" if rank == 0 else f"{tempfile.gettempdir()}/pgle_{rank}"
    nsys = ["nsys", "profile", "-s", "none", "-o", report, "--force-overwrite", "true",
            "--capture-range=cudaProfilerApi", "--capture-range-end=stop"]  # fmt: skip
    pbtxt = f"{PGLE_DIR}/{options.spec.run_id}.pbtxt"
    off = xla_flags.replace(LHS_ON, "--xla_gpu_enable_latency_hiding_scheduler=false")
    convert = ["--profile_path", f"{report}.nsys-rep", "--post_process", "--pgle_output_path"]
    return PglePass(
        profile_argv=[*nsys, "python3", *profile],
        profile_xla_flags=f"{off} {pgle['disable_async_collectives']}",
        converter_argv=["python3", pgle["converter"], *convert, pbtxt],
        perf_xla_flags=f"{xla_flags} --xla_gpu_pgle_profile_file_or_directory_path={pbtxt}",
        report=report,
    )


PROFILE_KEYS = {"run_name", "steps", "profiler", "skip_first_n_steps_for_profiler",
                "profiler_steps"}  # fmt: skip
"""Keys the profile pass sets itself."""


def resolved(options: EntryOptions) -> dict[str, Any]:
    """What this entry point runs, as data (``llmbench render``): ``train.py``'s argv and
    rank 0's PGLE pass with the XLA flags launch.sh exports."""
    xla = str(options.spec.parity.env.get("XLA_FLAGS", ""))
    the_pass = pgle_pass(options, 0, xla)
    return {
        "argv": argv_for(options),
        "pgle_pass_rank0": dataclasses.asdict(the_pass) if the_pass else None,
    }


def run_pgle(the_pass: PglePass, rank: int) -> None:  # pragma: no cover - needs MaxText
    """The profile pass (its output in ``pgle/``, not in the train log: its steps are not
    the measured ones), then rank 0 writes the latency profile."""

    os.makedirs(PGLE_DIR, exist_ok=True)
    print(f"llmbench: PGLE profile pass on rank {rank}, log in {PGLE_DIR}/", flush=True)
    env = dict(os.environ, XLA_FLAGS=the_pass.profile_xla_flags)
    with open(f"{PGLE_DIR}/profile_rank{rank}.log", "w") as log:
        subprocess.run(the_pass.profile_argv, env=env, stdout=log, stderr=log, check=True)
        if rank == 0:
            subprocess.run(the_pass.converter_argv, stdout=log, stderr=log, check=True)


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - needs MaxText

    options = parse_args(argv, "llmbench.ranks.entrypoints.maxtext")
    args = argv_for(options)  # before the heavy import
    rank = int(os.environ.get("SLURM_PROCID", "0"))
    the_pass = pgle_pass(options, rank, os.environ.get("XLA_FLAGS", ""))
    if the_pass is not None:
        run_pgle(the_pass, rank)
        # The other ranks reach the measured run's jax.distributed start first and wait
        # there for rank 0, which joins after writing the profile they compile with.
        os.environ["XLA_FLAGS"] = the_pass.perf_xla_flags
    # As ``python3 train.py ...``: the script imports its sibling modules, so its folder
    # goes first on sys.path; hardware=gpu_multiprocess makes JAX find the other ranks
    # from the SLURM_* variables srun set for this task.
    sys.path.insert(0, str(Path(args[0]).parent))
    sys.argv = args
    runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
