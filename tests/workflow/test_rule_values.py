"""What the workflow asks per run (``llmbench.workflow.rule_values``): constants folded, per-run
Slurm resources, labels and files."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

from llmbench.core.config import run_specs, validate_and_expand, validate_config
from llmbench.workflow.rule_values import (
    label_values,
    launch_env,
    missing_embedded_packages,
    per_run,
    run_groups,
    train_resources,
)
from tests.helpers import tiny_config

SPECS = run_specs(
    validate_config(
        {
            "sweeps": [
                {"workload": "tiny-llama", "sizes": ["tiny"], "dtypes": ["fp32", "bf16"],
                 "gpu_type": "cpu", "scales": [1, 2]},
                {"workload": "llama3.1-nemo", "sizes": ["8b"], "dtypes": ["bf16"],
                 "gpu_type": "h100", "scales": [8, 16]},
            ]
        }
    )
)  # fmt: skip


def test_a_shared_value_is_a_constant_and_a_varying_one_a_callable() -> None:
    assert per_run({"a": 4, "b": 4}, lambda run, attempt: 0) == 4
    calls = []

    def of_run(run, attempt):
        calls.append((run, attempt))
        return {"a": 1, "b": 2}[run]

    value = per_run({"a": 1, "b": 2}, of_run)
    assert callable(value)
    assert value(SimpleNamespace(run="b"), 3) == 2 and calls == [("b", 3)]
    # a value a retry may change stays a callable even when every first try agrees
    assert callable(per_run({"a": "", "b": ""}, lambda run, attempt: "", varies=True))
    # a process without every run's table (inside a job) always gets the callable
    in_job = per_run({}, lambda run, attempt: f"{run}:{attempt}")
    assert in_job(SimpleNamespace(run="a"), 1) == "a:1"


def test_train_resources_per_run(tmp_path) -> None:
    by_id = {s.run_id: s for s in SPECS}
    cpu = train_resources(by_id["tiny-llama_tiny_fp32_cpux2_perf"], tmp_path, 1, {}, 2)
    gpu = train_resources(by_id["llama3.1-nemo_8b_bf16_h100x16_perf"], tmp_path, 1, {}, 1)
    assert cpu["gres"] == "" and cpu["cpus_per_task"] == 2
    assert gpu["nodes"] == 2 and gpu["tasks_per_node"] == 8 and gpu["gres"] == "gpu:8"
    # a retry of a run without a killed attempt avoids no node
    assert train_resources(by_id["tiny-llama_tiny_fp32_cpux2_perf"], tmp_path, 2, {}, 2) == cpu


def test_labels_groups_and_environment(tmp_path) -> None:
    labels = label_values(SPECS)
    assert labels["workload"] == "llama3.1-nemo, tiny-llama"
    assert labels["scale"] == "1-16 GPUs"
    assert label_values([s for s in SPECS if s.gpu_type == "cpu"])["scale"] == "1-2 CPU ranks"
    groups = run_groups(SPECS)
    assert sorted(groups) == ["llama3.1-nemo_8b_h100_weak", "tiny-llama_tiny_cpu_weak"]
    assert sum(map(len, groups.values())) == len(SPECS)
    env = launch_env(SPECS[-1], str(tmp_path / "stage"), "10.0.0.1")
    assert env["LLMBENCH_STAGE_PATH"] == str((tmp_path / "stage").resolve())
    assert env["LLMBENCH_MASTER_ADDR"] == "10.0.0.1" and "LLMBENCH_PYTHON" in env


def test_a_venv_run_without_container_imports_this_checkouts_source(tmp_path) -> None:
    nemo = SPECS[-1]
    bare = launch_env(dataclasses.replace(nemo, container="none"), str(tmp_path), None)
    assert Path(bare["PYTHONPATH"], "llmbench", "workflow", "rule_values.py").is_file()
    # In a container the image's PYTHONPATH stays its own; the embedded run needs no venv.
    assert "PYTHONPATH" not in launch_env(
        dataclasses.replace(nemo, container="enroot"), str(tmp_path), None
    )
    assert "PYTHONPATH" not in launch_env(SPECS[0], str(tmp_path), None)


def test_a_missing_training_package_is_named_before_any_run() -> None:
    specs = validate_and_expand(tiny_config())[1]
    line = missing_embedded_packages(specs, modules=("torch", "llmbench_no_such_package"))
    assert line is not None and "\n" not in line
    assert "needs llmbench_no_such_package, not installed" in line  # torch is installed
    assert "pip install '.[embedded]'" in line
    assert missing_embedded_packages(specs) is None  # torch is here
    gpu = [dataclasses.replace(s, framework="nemo2") for s in specs]
    assert missing_embedded_packages(gpu, modules=("llmbench_no_such_package",)) is None
