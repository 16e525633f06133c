"""One launcher interface (``llmbench.launch.launchers``): every launcher the config may
name has a record and an implementation, and no code outside the two registries branches
on a launcher's name."""

from __future__ import annotations

import ast
import dataclasses
import json
import platform
import re
from pathlib import Path

import pytest

from llmbench.core.config import config_schema, run_specs, validate_config
from llmbench.core.launchers import LAUNCHER_TRAITS, cluster_type, is_platform, launcher_traits
from llmbench.launch.launchers import LAUNCHERS, Launcher, launcher_for, render_launch_script
from tests.helpers import REPO, tiny_config
from tests.switches import python_files, switches

NAMES = frozenset(LAUNCHER_TRAITS)
REGISTRIES = {
    REPO / "src/llmbench/core/launchers.py",
    REPO / "src/llmbench/launch/launchers.py",
}
"""The only files that may say which launcher is which."""


def _mentions_launcher(node: ast.AST) -> bool:
    return "launcher" in ast.unparse(node).lower()


def _names_launchers(node: ast.AST) -> bool:
    """A launcher's name, a collection holding one, or a constant listing launchers."""
    if isinstance(node, ast.Constant):
        return node.value in NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_launchers(e) for e in node.elts)
    if isinstance(node, ast.Name):
        return node.id.endswith("LAUNCHERS")
    if isinstance(node, ast.Attribute):
        return node.attr.endswith("LAUNCHERS")
    return False


def launcher_switches(source: str) -> list[str]:
    """Where ``source`` (Python) decides by a launcher's name: a comparison of something
    named launcher with a launcher's name (``==``, ``!=``, ``in``), a ``match`` on it, or a
    table keyed by launcher names."""
    return switches(source, _mentions_launcher, _names_launchers, NAMES, "launcher names")


SMK_SWITCH = re.compile(r"launcher\W[^\n]*(==|!=|\bin\b)")


def test_the_check_finds_every_kind_of_switch() -> None:
    # the shapes the code had before the interface (so the check below can fail)
    assert launcher_switches('if spec.launcher == "srun":\n    pass')
    assert launcher_switches('x = launcher != "local"')
    assert launcher_switches("ok = spec.launcher in PLATFORM_LAUNCHERS")
    assert launcher_switches('ok = config["launcher"] in ("kubernetes", "runai")')
    assert launcher_switches('T = {"local": "local", "srun": "slurm"}')
    assert launcher_switches("match spec.launcher:\n    case _:\n        pass")
    # what is not a switch: a site block by name, a launcher's record
    assert not launcher_switches('poll = config["runai"]["poll_s"]')
    assert not launcher_switches("platform = launcher_traits(spec.launcher).platform")
    assert not launcher_switches('run_on = config["setup"]["run_on"] == "local"')


@pytest.mark.parametrize("path", python_files(REGISTRIES), ids=lambda p: str(p.relative_to(REPO)))
def test_no_code_outside_the_registry_branches_on_a_launcher(path: Path) -> None:
    assert launcher_switches(path.read_text()) == []


def test_no_rule_file_branches_on_a_launcher() -> None:
    for path in [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]:
        hits = [line for line in path.read_text().splitlines() if SMK_SWITCH.search(line)]
        assert hits == [], path


def test_every_launcher_the_schema_allows_has_a_record_and_an_implementation() -> None:
    allowed = config_schema()["properties"]["launcher"]["enum"]
    assert list(LAUNCHER_TRAITS) == allowed == list(LAUNCHERS)
    for name, launcher in LAUNCHERS.items():
        assert isinstance(launcher, Launcher)
        assert launcher.traits is LAUNCHER_TRAITS[name]
        # a platform names its profile block and polls; the others have neither
        traits = launcher.traits
        assert (traits.site_block is not None) == traits.platform == (traits.poll_s > 0)
        assert is_platform(name) == traits.platform
        assert cluster_type(name) == traits.cluster_type
    assert cluster_type(None) == "local"  # records from before the field existed
    with pytest.raises(Exception, match="launcher: 'pbs' is not allowed; allowed: local, srun"):
        launcher_traits("pbs")


def _spec(launcher: str, **config: object):
    (spec, _) = run_specs(validate_config(tiny_config(launcher=launcher, **config)))
    return spec


def test_each_launcher_renders_its_own_script_and_records_its_cluster(tmp_path: Path) -> None:
    local = _spec("local")
    srun = _spec("srun")
    assert "torch.distributed.run" in render_launch_script(local)
    assert "\nsrun " in render_launch_script(srun) or "exec srun" in render_launch_script(srun)
    assert launcher_for(local).outcome(tmp_path, "17") == {
        "cluster_type": "local",
        "workload_id": None,
    }
    # a Slurm run is named by its job; its ranks are the job's steps, outside launch.sh
    assert launcher_for(srun).outcome(tmp_path, "17")["workload_id"] == "17"
    assert launcher_for(srun).outside_pids("17") is not None
    assert launcher_for(srun).outside_pids(None) is None
    assert launcher_for(local).outside_pids("17") is None
    # the train job samples its node unless launch.sh does (srun on GPU nodes)
    assert launcher_for(srun).runner_samples(srun)
    gpu = dataclasses.replace(srun, gpu_type="h100")
    assert not launcher_for(gpu).runner_samples(gpu)


def test_a_platform_reads_its_verdict_from_the_submit_scripts_record(tmp_path: Path) -> None:
    platform = LAUNCHERS["kubernetes"]
    assert platform.outcome(tmp_path, None)["cluster_type"] == "kubernetes"
    (tmp_path / "platform.json").write_text(
        json.dumps({"workload_id": "w-1", "state": "Failed", "failure_reason": "oom_killed",
                    "detail": "rank 0 OOMKilled"})
    )  # fmt: skip
    outcome = platform.outcome(tmp_path, "99")
    assert outcome == {
        "cluster_type": "kubernetes",
        "workload_id": "w-1",
        "platform_state": "Failed",
        "failure_reason": "oom_killed",
        "end_detail_platform": "rank 0 OOMKilled",
    }
    # a verdict that adds nothing to the log and exit code is left out
    (tmp_path / "platform.json").write_text(json.dumps({"failure_reason": "job_failed"}))
    assert "failure_reason" not in platform.outcome(tmp_path, None)


def test_an_unknown_launcher_is_one_line() -> None:
    spec = dataclasses.replace(_spec("local"), launcher="pbs")
    with pytest.raises(Exception, match=r"launcher='pbs': allowed: local, srun, kubernetes"):
        render_launch_script(spec)


def test_each_launcher_lists_the_nodes_preflight_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """srun asks Slurm (sinfo; None where there is none, and the gate then stops the
    sweep); the others answer the machine the train jobs start on."""
    here = platform.node().split(".")[0]
    for name in ("local", "kubernetes", "runai"):
        listed = LAUNCHERS[name].nodes("gpu")
        assert listed is not None and listed.nodes == (here,), name
    monkeypatch.setenv("PATH", str(tmp_path))  # no sinfo
    assert LAUNCHERS["srun"].nodes("gpu") is None
