"""The checked config kept for Snakemake's in-job processes (llmbench.workflow.spec_cache): read
back only for the same check, rebuilt (None) for anything else."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest
import yaml

from llmbench.core.catalog import load_catalog
from llmbench.core.config import run_specs, validate_config, workflow_config
from llmbench.core.runspec import RunSpec
from llmbench.launch.variants import VARIANTS
from llmbench.workflow import spec_cache
from tests.helpers import HERE, tiny_config

SITE = {"launcher": "srun", "master_addr": "127.0.0.1"}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOAD_CHECKPOINT_PATH", raising=False)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(tiny_config((1, 2, 3))))
    return tmp_path


def checked(workdir: Path, site: dict = SITE) -> tuple[dict, list]:
    return workflow_config(site, workdir / "config.yaml", [workdir], host=HERE)


def stored(workdir: Path, site: dict = SITE, cores_checked: bool = False) -> Path:
    path = workdir / ".snakemake/llmbench/specs.json"
    result = checked(workdir, site)
    assert spec_cache.write_specs(path, "config.yaml", site, [workdir], result, cores_checked)
    return path


def test_reads_back_what_the_check_gave(workdir: Path) -> None:
    path = stored(workdir)
    config, specs = checked(workdir)
    assert spec_cache.read_specs(path, "config.yaml", SITE, [workdir]) == (config, specs)
    assert [s.run_id for s in specs] == [
        "tiny-llama_tiny_fp32_cpux1_perf",
        "tiny-llama_tiny_fp32_cpux2_perf",
        "tiny-llama_tiny_fp32_cpux3_perf",
    ]


def test_an_edited_config_is_checked_again(workdir: Path) -> None:
    path = stored(workdir)
    (workdir / "config.yaml").write_text(yaml.safe_dump(tiny_config((1, 2))))
    assert spec_cache.read_specs(path, "config.yaml", SITE, [workdir]) is None


@pytest.mark.parametrize(
    "other",
    [
        {"site": {**SITE, "master_addr": "10.0.0.1"}},
        {"base_dirs": ["/"]},
        {"environment": "/ckpt"},
    ],
)
def test_other_overrides_folders_or_environment_miss(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, other: dict
) -> None:
    path = stored(workdir)
    if "environment" in other:
        monkeypatch.setenv("LOAD_CHECKPOINT_PATH", other["environment"])
    site = other.get("site", SITE)
    base_dirs = other.get("base_dirs", [workdir])
    assert spec_cache.read_specs(path, "config.yaml", site, base_dirs) is None


def test_an_edited_package_is_another_version(workdir: Path, tmp_path_factory) -> None:
    package = tmp_path_factory.mktemp("package")
    (package / "module.py").write_text("x = 1\n")
    before = spec_cache.package_fingerprint.__wrapped__(package)
    (package / "module.py").write_text("x = 22\n")
    assert spec_cache.package_fingerprint.__wrapped__(package) != before
    assert spec_cache.package_fingerprint() == spec_cache.package_fingerprint.__wrapped__(
        spec_cache.PACKAGE_DIR
    )


def test_cores_count_only_when_the_check_counted_them(workdir: Path, monkeypatch) -> None:
    path = stored(workdir, cores_checked=True)
    assert spec_cache.read_specs(path, "config.yaml", SITE, [workdir]) is not None
    monkeypatch.setattr(os, "cpu_count", lambda: 1024)  # a node with other cores
    assert spec_cache.read_specs(path, "config.yaml", SITE, [workdir]) is None
    path = stored(workdir)  # written on this machine, cores not checked
    assert spec_cache.read_specs(path, "config.yaml", SITE, [workdir]) is not None


@pytest.mark.parametrize(
    "damage", ["", "not json\n", "{}\n", '{"config": {}, "specs": [{"x": 1}]}\n']
)
def test_a_damaged_file_is_no_cache(workdir: Path, damage: str) -> None:
    path = stored(workdir)
    key = path.read_text().splitlines()[0]
    path.write_text(f"{key}\n{damage}")
    assert spec_cache.read_specs(path, "config.yaml", SITE, [workdir]) is None


def test_a_missing_file_is_no_cache(workdir: Path) -> None:
    assert spec_cache.read_specs(workdir / "absent.json", "config.yaml", SITE, [workdir]) is None


def test_values_json_would_change_are_not_stored(workdir: Path) -> None:
    path = workdir / "specs.json"
    config, specs = checked(workdir)
    config["note"] = datetime.date(2026, 1, 1)  # YAML reads an unquoted date as a date
    assert not spec_cache.write_specs(path, "config.yaml", SITE, [workdir], (config, specs), False)
    assert not path.exists()


def test_values_json_gives_back_changed_are_not_stored(workdir: Path) -> None:
    path = workdir / "specs.json"
    config, specs = checked(workdir)
    config["note"] = (1, 2)  # JSON writes it without complaint and reads back a list
    assert not spec_cache.write_specs(path, "config.yaml", SITE, [workdir], (config, specs), False)
    assert not path.exists()


def test_every_catalog_run_and_variant_is_stored_and_read_back_as_itself(workdir: Path) -> None:
    # write_specs compares what JSON gives back as dictionaries: it relies on this.
    catalog = load_catalog()
    sweeps = [
        row.sweep_entry(variants=list(VARIANTS))
        for workload in catalog.workloads()
        for row in catalog.rows(workload)
    ]
    tiny = {"workload": "tiny-llama", "sizes": ["tiny"], "dtypes": ["fp32", "bf16"]}
    sweeps.append({**tiny, "gpu_type": "cpu", "scales": [1, 2]})
    config = validate_config({"sweeps": sweeps, "launcher": "srun", "container": "none"})
    specs = run_specs(config)
    assert {spec.variant for spec in specs} == set(VARIANTS)
    for spec in specs:
        assert RunSpec.from_dict(spec.to_dict()) == spec, spec.run_id
    path = workdir / "specs.json"
    assert spec_cache.write_specs(path, "config.yaml", SITE, [workdir], (config, specs), False)
    assert spec_cache.read_specs(path, "config.yaml", SITE, [workdir]) == (config, specs)


def test_a_read_only_folder_is_not_an_error(workdir: Path) -> None:
    blocker = workdir / "file"
    blocker.write_text("")
    path = blocker / "specs.json"  # its folder cannot be made
    assert not spec_cache.write_specs(path, "config.yaml", SITE, [workdir], checked(workdir), False)


def test_the_same_check_is_not_written_again(workdir: Path) -> None:
    path = stored(workdir)
    mtime = path.stat().st_mtime_ns
    os.utime(path, ns=(mtime - 10**9, mtime - 10**9))
    stored(workdir)
    assert path.stat().st_mtime_ns == mtime - 10**9
