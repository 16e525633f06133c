"""A run's parity settings are one frozen typed value, resolved once: read by kind, written
into run_spec.json as the dictionaries it always held, and read back from older files."""

from __future__ import annotations

import dataclasses
import json

import pytest

from llmbench.core.parity_settings import NO_PARITY, ParitySettings, Setting
from llmbench.core.runspec import RunSpec, reference_time_limit_min
from llmbench.launch.launchers import render_launch_script
from tests.helpers import release_runs

SPEC_RUNS = release_runs("dgxc-2025")
V2608_RUNS = release_runs("v26.08")

OLDEST_PARITY = {
    "family": "llama3.1-nemo",
    "document": "llama31-nemo2-h100.txt",
    "reference": "DGXC llama3.1 v25.04.02",
    "settings": [
        {"kind": "sbatch", "name": "exclusive", "value": True, "source": "DGXC:a.sh@v1#L1"},
        {"kind": "env", "name": "NCCL_NVLS_ENABLE", "value": "0", "source": "DGXC:a.sh@v1#L2"},
        {"kind": "limit", "name": "time_limit_min", "value": 30, "source": "DGXC:a.sh@v1#L3"},
    ],
    "differences": [],
}
"""run_spec.json's parity block as the first release wrote it: no ``stack``, no
``unverified``, each citation one string."""


def test_every_catalog_run_writes_its_parity_as_before_and_reads_it_back() -> None:
    for spec in SPEC_RUNS + V2608_RUNS:
        record = json.loads(spec.to_json())["parity"]
        assert list(record) == [
            "differences", "document", "family", "reference", "settings", "stack", "unverified"
        ], spec.run_id  # fmt: skip
        for setting in record["settings"]:
            assert {"kind", "name", "value", "source"} <= set(setting) <= {
                "kind", "name", "value", "source", "requires", "unverified", "addition"
            }, spec.run_id  # fmt: skip
            assert isinstance(setting["source"], list) and setting["source"], spec.run_id
        back = RunSpec.from_dict(json.loads(spec.to_json()))
        assert back == spec and back.to_dict() == spec.to_dict(), spec.run_id
        for kind in ("sbatch", "srun", "prefix", "node", "env", "recipe", "logging", "limit"):
            expected = {
                s["name"]: s["value"]
                for s in record["settings"]
                if s["kind"] == kind and "requires" not in s
            }
            assert dict(getattr(back.parity, kind)) == expected, (spec.run_id, kind)


def test_a_run_without_a_reference_writes_an_empty_block() -> None:
    (spec,) = release_runs("dgxc-2025", sweeps=[{"workload": "tiny-llama", "sizes": ["tiny"],
                                            "dtypes": ["fp32"], "gpu_type": "cpu",
                                            "scales": [1]}], container="none")  # fmt: skip
    assert spec.parity == NO_PARITY and not spec.parity.has_reference
    assert json.loads(spec.to_json())["parity"] == {}
    assert RunSpec.from_dict(spec.to_dict()).parity == NO_PARITY


def test_an_older_run_spec_reads_back_by_kind() -> None:
    data = {**SPEC_RUNS[0].to_dict(), "parity": OLDEST_PARITY, "limits": None}
    spec = RunSpec.from_dict(json.loads(json.dumps(data)))
    assert spec.parity.has_reference and spec.parity.stack is None
    assert dict(spec.parity.sbatch) == {"exclusive": True}
    assert dict(spec.parity.env) == {"NCCL_NVLS_ENABLE": "0"}
    assert spec.parity.settings[0].source == ("DGXC:a.sh@v1#L1",)
    assert reference_time_limit_min(spec.parity) == 30
    assert spec.limits is not None and spec.limits.time_limit_s == 30 * 60
    assert "export NCCL_NVLS_ENABLE=0" in render_launch_script(spec)


def test_the_settings_are_frozen_and_resolved_once() -> None:
    spec = SPEC_RUNS[0]
    with pytest.raises(TypeError):
        spec.parity.env["NCCL_DEBUG"] = "INFO"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.parity.env = {}  # type: ignore[misc]
    assert spec.parity.env is spec.parity.env  # one mapping, not one per question


def test_a_setting_that_waits_for_the_container_is_in_no_kind_until_decided() -> None:
    pending = Setting(kind="env", name="X", value="1", requires={"nemo": ">=2.5"})
    parity = ParitySettings(document="d", settings=(pending,))
    assert dict(parity.env) == {} and parity.pending == (pending,)
    decided = dataclasses.replace(parity, settings=(dataclasses.replace(pending, requires=None),))
    assert dict(decided.env) == {"X": "1"} and decided.pending == ()
