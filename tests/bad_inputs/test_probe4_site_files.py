"""The fourth bad-input probe's site-file cases (V*, PL34, F*): Kubernetes' own rules for
tolerations and volumes, a Run:ai URL the client cannot take apart, values too long for a
command line or that read differently on screen, and YAML alias bombs, each refused in
one line by `llmbench plan --site` and by the workflow's check alike; the values that
stay accepted reach no shell.

The site file goes through the one YAML loader (``llmbench.core.yamlfile``) under `plan`,
and through Snakemake's own loader under the workflow (``--configfile``): both meet the
same limits (``check_size``)."""

from __future__ import annotations

import ast
import copy
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmbench.core.value_checks import MAX_VALUE_CHARS
from llmbench.core.yamlfile import MAX_VALUES, load_yaml_text, read_yaml_file
from llmbench.errors import ConfigError
from llmbench.workflow.config_check import check_workflow_config
from tests.bad_inputs.cases import BASE
from tests.bad_inputs.checks import PLAN_SUMMARY, assert_untouched, one_error_line, run_cli
from tests.bad_inputs.test_probe3_platforms import KUBERNETES, RUNAI, kube, profile_copy, runai
from tests.helpers import REPO

BOMB = """\
launcher: kubernetes
kubernetes:
  image: example/llmbench:test
  context: &i [&h [&g [&f [&e [&d [&c [&b [&a ["lol","lol","lol","lol","lol","lol","lol","lol",\
"lol"],*a,*a,*a,*a,*a,*a,*a,*a],*b,*b,*b,*b,*b,*b,*b,*b],*c,*c,*c,*c,*c,*c,*c,*c],*d,*d,*d,*d,\
*d,*d,*d,*d],*e,*e,*e,*e,*e,*e,*e,*e],*f,*f,*f,*f,*f,*f,*f,*f],*g,*g,*g,*g,*g,*g,*g,*g],*h,*h,\
*h,*h,*h,*h,*h,*h]
"""
"""V22's site file (the probe's appendix): 9 levels of 9, 9^9 strings once expanded."""


def bomb_config(levels: int) -> str:
    """PL34: the experiment itself with a ``levels``-deep alias bomb as sweeps[0].workload."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n in range(1, levels):
        lines.append(f"l{n}: &l{n} [{','.join([f'*l{n - 1}'] * 9)}]")
    lines.append(f"sweeps:\n- workload: *l{levels - 1}\n  sizes: [tiny]\n  dtypes: [fp32]")
    lines.append("  gpu_type: cpu\n  scales: [1]\nsteps: 50\nwindow: [35, 44]")
    return "\n".join(lines) + "\n"


def tolerate(**fields: Any) -> dict[str, Any]:
    return kube(tolerations=[{"key": "a", "operator": "Exists", **fields}])


BAD = {  # case: (site file, words of the one error line)
    "V3b": (
        tolerate(effect="NoSchedule", tolerationSeconds=60),
        ("kubernetes.tolerations[0].tolerationSeconds", "60", "effect NoSchedule", "NoExecute"),
    ),
    "V3d": (
        kube(tolerations=[{"operator": "Equal", "value": "b", "effect": "NoSchedule"}]),
        ("kubernetes.tolerations[0]", "no key with operator Equal", "operator Exists"),
    ),
    "V3d-default": (
        kube(tolerations=[{"value": "b"}]),
        ("kubernetes.tolerations[0]", "no key with operator Equal"),
    ),
    "V8": (
        kube(pvcs=["ws:/dev/shm:claim"]),
        ("kubernetes.pvcs[0]", "'/dev/shm'", "already mounted by the pods' shm"),
    ),
    "V8-slash": (
        kube(pvcs=["ws:/dev/shm/:claim"]),
        ("kubernetes.pvcs[0]", "'/dev/shm/'", "already mounted"),
    ),
    "V8-runai": (
        runai(pvcs=["ws:/dev/shm:claim"]),
        ("runai.pvcs[0]", "'/dev/shm'", "already mounted"),
    ),
    "V9": (
        kube(pvcs=["ws:/a:c1", "ws:/b:c2"]),
        ("kubernetes.pvcs[1]", "volume name 'ws'", "kubernetes.pvcs[0]"),
    ),
    "V9-path": (
        kube(pvcs=["a:/data:c1", "b:/data:c2"]),
        ("kubernetes.pvcs[1]", "'/data'", "kubernetes.pvcs[0]"),
    ),
    "V9-dshm": (
        kube(pvcs=["dshm:/scratch:c1"]),
        ("kubernetes.pvcs[0]", "volume name 'dshm'", "/dev/shm"),
    ),
    "V3": (
        tolerate(effect="NoExecute", tolerationSeconds=-5),
        ("kubernetes.tolerations[0].tolerationSeconds", "-5", "0 or more"),
    ),
    "V7": (
        kube(pvcs=["ws:/a b/$(id):claim"]),
        ("kubernetes.pvcs[0]", "'/a b/$(id)'", "absolute path of letters"),
    ),
    "V16": (
        runai(project="p" * 1_000_000),
        ("runai.project", "1,000,000 characters long", f"at most {MAX_VALUE_CHARS:,}"),
    ),
    "V17": (
        runai(project="proj\u202etxt.exe\U0001f600"),
        ("runai.project", "control character", "bidirectional override"),
    ),
    "V18": (
        runai(base_url="https://[::1/api/v1"),
        ("runai.base_url", "'https://[::1/api/v1'", "is not a URL", "IPv6 host in brackets"),
    ),
    "V18-port": (
        runai(base_url="https://runai.example.com:http/api/v1"),
        ("runai.base_url", "is not a URL"),
    ),
    "V18-http": (
        runai(base_url="http://runai.example.com/api/v1"),
        ("runai.base_url", "plain http to another machine", "https://<host>/api/v1"),
    ),
}

GOOD_REFUSED = {  # the probe's GOOD cases of these surfaces: still one line each
    "V1": (kube(tolerations=[{"key": "bad key!", "operator": "Exists"}]), ("tolerations[0].key",)),
    "V2": (
        kube(tolerations=[{"key": "a", "value": "$(touch x)\nx"}]),
        ("kubernetes.tolerations[0].value",),
    ),
    "V3c": (tolerate(value="b"), ("kubernetes.tolerations[0].value", "'b'", "operator Exists")),
    "V4": (kube(runtime="Bad_Runtime; rm -rf /"), ("kubernetes.runtime",)),
    "V6": (kube(pvcs=["ws:/a\nb:claim"]), ("kubernetes.pvcs[0]",)),
    "V10": (runai(llmbench_src='/x"; touch INJ; "'), ("runai.llmbench_src",)),
    "V13": (runai(image="bad image; rm -rf /"), ("runai.image",)),
    "V14": (runai(base_url="https://host/api/v1\nX-Evil: 1"), ("runai.base_url",)),
    "V15": (runai(base_url="https://host/api/v1?x=$(touch x)#frag"), ("runai.base_url",)),
    "V19": (runai(project="pr\x00oj"), ("runai.project", "control character")),
    "F1": ({"fabric": 1}, ("fabric", "1")),
    "F2": ({"fabric": ["ib"]}, ("fabric", "['ib']")),
    "F3": ({"fabric": "IB"}, ("fabric", "'IB'")),
    "F4": ({"fabric": "ib "}, ("fabric", "'ib '")),
    "F5": ({"fabric": True}, ("fabric", "True")),
    "F6": ({"fabric": {}}, ("fabric", "{}")),
    "F7": ({"fabric": ""}, ("fabric", "''")),
    "F8": ({"fabric": "roce"}, ("fabric", "'roce'")),
}

ACCEPTED = {  # values Kubernetes and Run:ai take, and that reach no shell (V5, V11, V12)
    "tolerations-noexecute": tolerate(effect="NoExecute", tolerationSeconds=0),
    "tolerations-all": kube(tolerations=[{"operator": "Exists"}]),
    "tolerations-equal": kube(tolerations=[{"key": "a", "value": "b", "effect": "NoSchedule"}]),
    "pvcs-two": kube(pvcs=["a:/data:c1", "b:/data/sub:c2"]),
    "V5": kube(context="$(touch INJECTED_K8S)"),
    "V11": runai(app_id="$(touch INJECTED_APP)"),
    "V12": runai(context="$(touch INJECTED_CTX)"),
    "runai-ipv6": runai(base_url="https://[::1]:8443/api/v1"),
    "runai-http-loopback": runai(base_url="http://[::1]:8080/api/v1"),
    "project-emoji": runai(project="proj\U0001f600"),
}


def write(folder: Path, site: dict[str, Any] | str, config: str | None = None) -> list[str]:
    (folder / "config.yaml").write_text(config or yaml.safe_dump(copy.deepcopy(BASE)))
    text = site if isinstance(site, str) else yaml.safe_dump(site, sort_keys=False)
    (folder / "site.yaml").write_text(text)
    return ["plan", "--config", "config.yaml", "--site", "site.yaml"]


def workflow_line(folder: Path) -> str | None:
    """The workflow's check of the same two files: the site file as Snakemake's
    ``--configfile`` reads it (PyYAML), merged over the experiment."""
    site = yaml.load((folder / "site.yaml").read_text(), Loader=yaml.SafeLoader) or {}
    try:
        check_workflow_config(site, "config.yaml", [folder, REPO])
    except ConfigError as err:
        return str(err)
    return None


@pytest.mark.parametrize("case", sorted(BAD) + sorted(GOOD_REFUSED))
def test_site_value_is_refused_in_one_line(case: str, sandbox: Path, capsys) -> None:
    site, words = BAD.get(case) or GOOD_REFUSED[case]
    argv = write(sandbox, site)
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == "", (code, err[-500:])
    line = one_error_line(err, *words, prefix="llmbench plan: error: config.yaml: ")
    assert line == f"llmbench plan: error: {workflow_line(sandbox)}"  # one check for both
    assert_untouched(sandbox)


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_site_value_kubernetes_and_runai_take_stays_accepted(case: str, sandbox: Path, capsys):
    code, out, err = run_cli(write(sandbox, ACCEPTED[case]), capsys)
    assert code == 0 and PLAN_SUMMARY.search(out), err
    assert workflow_line(sandbox) is None
    assert_untouched(sandbox)


def limited(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``llmbench`` in a process that may not map more than 1.5 GiB (the bomb took 2.3)."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))

    return subprocess.run(
        [sys.executable, "-m", "llmbench.cli", *argv],
        cwd=cwd, capture_output=True, text=True, timeout=120, preexec_fn=cap,
    )  # fmt: skip


@pytest.mark.parametrize("case", ["V22", "PL34"])
def test_an_alias_bomb_is_refused_in_one_line_within_bounded_memory(case: str, sandbox: Path):
    """V22 (9^9 strings in kubernetes.context of the site file), PL34 (9^7 in the
    experiment's sweeps[0].workload): one line naming the key, under a 1.5 GiB limit."""
    if case == "V22":
        argv, key = write(sandbox, BOMB), "site.yaml: kubernetes.context: "
    else:
        argv, key = write(sandbox, KUBERNETES, bomb_config(7)), "config.yaml: l6: "
    proc = limited(argv, sandbox)
    assert proc.returncode == 2, proc.stderr[-2000:]
    line = one_error_line(proc.stderr, key, f"more than {MAX_VALUES:,} values", "alias")
    assert len(line) < 400
    assert_untouched(sandbox)


def test_an_alias_bomb_through_the_workflow_check_is_one_line(sandbox: Path) -> None:
    """V22 as Snakemake hands the site file over (its own YAML loader built it)."""
    write(sandbox, BOMB)
    line = workflow_line(sandbox)
    assert line is not None and line.startswith("config.yaml: kubernetes.context: more than")


@pytest.mark.parametrize(
    "text, words",
    [
        ("a: &a [*a]\n", ("a: a value that contains itself",)),
        ("x: " + "[" * 80 + "]" * 80 + "\n", ("x: values nested more than 64 levels deep",)),
        ("x: " + "[" * 5000 + "]" * 5000 + "\n", ("values nested too deeply to read",)),
    ],
)
def test_the_loader_refuses_self_reference_and_deep_nesting(text, words, tmp_path: Path):
    path = tmp_path / "site.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        read_yaml_file(path)
    assert str(err.value).startswith(f"{path}: ") and all(w in str(err.value) for w in words)


def test_every_yaml_llmbench_reads_goes_through_the_one_loader() -> None:
    """No module of the package parses YAML but ``llmbench.core.yamlfile`` (dumping is
    fine): a new reader would miss the limits."""
    offenders = []
    for path in sorted((REPO / "src/llmbench").rglob("*.py")):
        if path.name == "yamlfile.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "yaml"
                and node.attr in ("load", "safe_load", "load_all", "safe_load_all", "compose")
            ):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: yaml.{node.attr}")
    assert offenders == []
    assert load_yaml_text("a: 1\n", "x") == {"a": 1}


SHELL_CALLS = {("subprocess", "run"), ("subprocess", "Popen"), ("subprocess", "call"),
               ("subprocess", "check_call"), ("subprocess", "check_output"), ("os", "system"),
               ("os", "popen"), ("os", "execv"), ("os", "execvp"), ("os", "execvpe")}  # fmt: skip


@pytest.mark.parametrize("module", ["kubernetes", "runai"])
def test_v5_v11_v12_past_launch_sh_the_platform_values_reach_no_shell(module: str) -> None:
    """kubernetes.context, runai.app_id and runai.context leave launch.sh single-quoted
    as options of ``python -m llmbench.launch.<module>`` (they arrive whole: the hostile
    values test, tests/bad_inputs/test_hostile_site_values.py); past it they go to the
    Kubernetes client (a kubeconfig context name) and the Run:ai API (a JSON body), and
    these modules start no process at all, so no value of theirs can reach a shell."""
    tree = ast.parse((REPO / f"src/llmbench/launch/{module}.py").read_text())
    calls = {
        (node.func.value.id, node.func.attr)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
    }
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not calls & SHELL_CALLS and "subprocess" not in imported


@pytest.mark.workflow
def test_v22_real_dry_run_refuses_the_bomb_in_one_line(sandbox: Path) -> None:
    """`snakemake -n --profile` with the bomb as the profile's site file: Snakemake loads
    it, llmbench refuses it in one line, within the same memory bound."""
    write(sandbox, KUBERNETES)
    profile = profile_copy("kubernetes", KUBERNETES, sandbox.parent)
    (profile / "site.yaml").write_text(BOMB)
    env_limit = "ulimit -v 3145728; "
    command = " ".join(
        f"'{part}'" for part in [sys.executable, "-m", "snakemake", "--snakefile",
                                 str(REPO / "Snakefile"), "-n", "--cores", "1", "--profile",
                                 str(profile)]
    )  # fmt: skip
    proc = subprocess.run(
        ["bash", "-c", env_limit + command], cwd=sandbox, capture_output=True, text=True,
        timeout=300, env=dict(os.environ),
    )  # fmt: skip
    ours = [line for line in proc.stderr.splitlines() if line.startswith("llmbench: error")]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(ours) == 1 and "kubernetes.context: more than" in ours[0], ours
    assert_untouched(sandbox)


def test_site_examples_of_every_profile_stay_accepted(sandbox: Path, capsys) -> None:
    for name, site in (("kubernetes", KUBERNETES), ("runai", RUNAI)):
        shipped = read_yaml_file(REPO / f"profiles/{name}/site.yaml") or {}
        merged = {**shipped, **site, name: {**(shipped.get(name) or {}), **site[name]}}
        code, _, err = run_cli(write(sandbox, merged), capsys)
        assert code == 0, err
