"""Bad-input probe 4, ``llmbench render``: the ``-o`` destinations it could not write and
the run id and site files it blamed wrongly (notes: bad-input probe 4, R7-R23). Each one is
one line, exit 2, and nothing half-written is left; read-only and full filesystems are real
ones, mounted in a private mount namespace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.bad_inputs.checks import one_error_line, run_cli
from tests.helpers import REPO, tiny_config

ID = "tiny-llama_tiny_fp32_cpux1_perf"
UNSHARE = shutil.which("unshare")


def _namespaces_work() -> bool:
    if UNSHARE is None:
        return False
    probe = [UNSHARE, "--user", "--map-root-user", "--mount", "true"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


in_a_mount_namespace = pytest.mark.prerequisite(
    _namespaces_work(), "needs unshare with user and mount namespaces (a private tmpfs)"
)


@pytest.fixture
def base(sandbox: Path) -> Path:
    path = sandbox / "base.yaml"
    path.write_text(yaml.safe_dump(tiny_config((1,))))
    return path


def _with_mount(mount: str, *render_args: str) -> subprocess.CompletedProcess[str]:
    """``mount`` (a shell command on ``$PWD``'s folders), then ``llmbench render ...`` twice
    in one private mount namespace: between the two, what ``full/`` holds is listed and
    ``full/fill`` removed; stderr's two parts are separated by a line ``--``."""
    cli = f'"{sys.executable}" -m llmbench.cli render "$@"'
    between = 'echo "--" >&2; ls -A full 2>/dev/null | sed "s/^/held: /"; rm -f full/fill'
    script = f'{mount} && {{ {cli}; echo "rc=$?"; {between}; {cli}; echo "rc=$?"; }}'
    return subprocess.run(
        [UNSHARE, "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh",
         *render_args],
        capture_output=True, text=True, timeout=300, check=False,
        env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
    )  # fmt: skip


@in_a_mount_namespace
def test_r12_out_inside_a_read_only_mount(base: Path, sandbox: Path) -> None:
    (sandbox / "ro").mkdir()
    proc = _with_mount("mount -t tmpfs -o size=1m,ro tmpfs ro", ID, "--config", str(base),
                       "-o", "ro/out")  # fmt: skip
    first = proc.stderr.split("--\n")[0]
    one_error_line(first, "-o ro/out: cannot be written (Read-only file system)")
    assert proc.stdout.startswith("rc=2")
    assert list((sandbox / "ro").iterdir()) == []


@in_a_mount_namespace
def test_r12b_out_is_an_empty_read_only_mount(base: Path, sandbox: Path) -> None:
    (sandbox / "ro").mkdir()
    proc = _with_mount("mount -t tmpfs -o size=1m,ro tmpfs ro", ID, "--config", str(base),
                       "-o", "ro")  # fmt: skip
    one_error_line(proc.stderr.split("--\n")[0], "-o ro: cannot be written (Read-only")
    assert proc.stdout.startswith("rc=2")


@in_a_mount_namespace
def test_r20_out_on_a_full_filesystem_leaves_nothing_behind(base: Path, sandbox: Path) -> None:
    """No space: one line and no half-written folder, so the same command, once there is
    room, writes it (before, it was refused as 'not an empty folder')."""
    (sandbox / "full").mkdir()
    mount = (
        "mount -t tmpfs -o size=64k tmpfs full && "
        "{ dd if=/dev/zero of=full/fill bs=4k 2>/dev/null; true; }"
    )
    proc = _with_mount(mount, ID, "--config", str(base), "-o", "full/new/out")
    first, second = proc.stderr.split("--\n")
    one_error_line(first, "-o full/new/out: cannot be written (No space left on device)")
    assert second == "", second
    lines = proc.stdout.splitlines()
    assert [line for line in lines if line.startswith("rc=")] == ["rc=2", "rc=0"], lines
    # the parent it made for the render is gone again; nothing but the filler is left
    assert [line for line in lines if line.startswith("held: ")] == ["held: fill"], lines
    assert "full/new/out: run_spec.json, launch.sh (nothing submitted)" in proc.stdout


def test_r16_out_is_a_dangling_symlink(base: Path, sandbox: Path, capsys) -> None:
    (sandbox / "o16").symlink_to("/nonexistent/target")
    code, out, err = run_cli(["render", ID, "--config", str(base), "-o", "o16"], capsys)
    assert code == 2 and out == ""
    one_error_line(err, "-o o16: a symbolic link to a path that does not exist")
    assert os.readlink(sandbox / "o16") == "/nonexistent/target"


def test_r19_out_below_a_regular_file(base: Path, sandbox: Path, capsys) -> None:
    (sandbox / "pfile").write_text("x\n")
    code, out, err = run_cli(["render", ID, "--config", str(base), "-o", "pfile/out"], capsys)
    assert code == 2 and out == ""
    one_error_line(err, "-o pfile/out: cannot be written (Not a directory)")
    assert (sandbox / "pfile").read_text() == "x\n"
    assert sorted(p.name for p in sandbox.iterdir()) == ["base.yaml", "pfile"]


def test_r18_an_empty_out_is_refused(base: Path, sandbox: Path, capsys) -> None:
    code, out, err = run_cli(["render", ID, "--config", str(base), "-o", ""], capsys)
    assert code == 2 and out == ""
    one_error_line(err, "-o '': an empty folder name", "allowed: a new or empty folder")
    assert not (sandbox / "results").exists()


def test_r7_a_run_id_with_a_leading_dash_is_named(base: Path, capsys) -> None:
    code, out, err = run_cli(["render", "-x", "--config", str(base)], capsys)
    assert code == 2 and out == ""
    one_error_line(err, "llmbench render: error: unrecognized arguments: -x",
                   "llmbench render --help")  # fmt: skip


def test_r8_no_run_id(base: Path, capsys) -> None:
    code, _, err = run_cli(["render", "--config", str(base)], capsys)
    assert code == 2
    one_error_line(err, "RUN_ID is missing", "a run id that `llmbench plan` lists")


def test_r23_a_missing_runai_value_blames_the_site_file(sandbox: Path, capsys) -> None:
    """Two site files, Kubernetes then Run:ai without its values: the Run:ai file (it
    chose the launcher) is named, with the key, not the config."""
    config = sandbox / "base.yaml"
    gpu = {"workload": "llama3.1-nemo", "sizes": ["8b"], "dtypes": ["bf16"],
           "gpu_type": "h100", "scales": [8]}  # fmt: skip
    config.write_text(yaml.safe_dump({"sweeps": [gpu]}))
    k8s, runai = sandbox / "k8s.yaml", sandbox / "runai.yaml"
    k8s.write_text(yaml.safe_dump({"launcher": "kubernetes",
                                   "kubernetes": {"image": "example/llmbench:test"}}))  # fmt: skip
    runai.write_text(yaml.safe_dump({"launcher": "runai"}))
    argv = ["render", "llama3.1-nemo_8b_bf16_h100x8_perf", "--config", str(config),
            "--site", str(k8s), "--site", str(runai), "-o", "out"]  # fmt: skip
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == ""
    line = one_error_line(err, f"{runai}: runai.base_url is not set", "runai: block")
    assert "base.yaml" not in line and "set it in profiles/runai" not in line
    assert not (sandbox / "out").exists()
