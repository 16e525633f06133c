"""No config value runs as a command: every string the config schema allows, on every
launcher, set to each payload of a table of shell injections. A value is either refused
by the config check (`llmbench plan` and the workflow) in one line naming its key, or it
is accepted, and then the attempt runs for real here: ``runner.run_attempt`` renders
launch.sh and the platform's files and runs launch.sh under its supervisor, with the
outside tools (srun, squeue, scontrol, the framework's interpreter) replaced by a
recorder; a platform's pod command runs as the pod would run it, with the recorder as its
python3. The marker file an injection would create never appears, the scripts run to
their end, and each value that reaches a command arrives there whole."""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmbench.core.config import check_config, config_schema
from llmbench.core.platform_site import KubernetesSite
from llmbench.errors import ConfigError
from llmbench.job.runner import run_attempt
from llmbench.launch.kubernetes import render_manifest_yaml
from llmbench.launch.launchers import check_platforms
from llmbench.launch.pods import node_command
from llmbench.telemetry.sampling import TelemetrySettings
from llmbench.workflow.rule_values import launch_env
from tests.helpers import HERE, REPO, tiny_config
from tests.kubernetes.standin_apiserver import StandInApiServer
from tests.launch.cases import EXAMPLE_IMAGES

MARK = "{marker}"
PAYLOADS = (
    f'"; touch {MARK}; "',
    f"$(touch {MARK})",
    f"`touch {MARK}`",
    f"'; touch {MARK}; '",
    f"x\ntouch {MARK}",
    f"\"'$(touch {MARK})'\" || touch {MARK} #",
    f"-x; touch {MARK} &",
)
"""Shell injections: double and single quotes closed early, command substitution in both
forms, a line break, an operator after a quote mix, a leading '-' (an option to argparse)."""

SITE_IMAGE = "example/llmbench:test"
BASES: dict[str, dict[str, Any]] = {
    "local": tiny_config((1,)),
    "srun": tiny_config((2,), launcher="srun"),
    "srun-enroot": {
        "sweeps": [
            {
                "workload": "llama3.1-nemo",
                "sizes": ["8b"],
                "dtypes": ["bf16"],
                "gpu_type": "h100",
                "scales": [8],
                "variants": ["ckpt-save"],
            }
        ],
        "launcher": "srun",
        "container": "enroot",
        "images": EXAMPLE_IMAGES,
    },
    "kubernetes": tiny_config((2,), launcher="kubernetes", kubernetes={"image": SITE_IMAGE}),
    "runai": tiny_config(
        (2,),
        launcher="runai",
        runai={
            "base_url": "https://runai.example.com/api/v1",
            "app_id": "llmb-bench",
            "project": "bench",
            "image": SITE_IMAGE,
            "secret_env": "LLMB_TEST_SECRET",
        },
    ),
}
"""One run per launcher: torchrun here, srun with and without a container (a GPU run with a
checkpoint folder and telemetry samplers), a Kubernetes and a Run:ai workload."""

TEMPLATES = {
    "runai.base_url": "https://runai.example.com/api/v1/{}",
    "kubernetes.llmbench_src": "/workspace/{}",
    "runai.llmbench_src": "/workspace/{}",
    "kubernetes.image": "example/llmbench:{}",
    "runai.image": "example/llmbench:{}",
    "images.<value>": "nvidia/nemo:{}",
    "kubernetes.pvcs[0]": "data:/data/{}:claim",
    "runai.pvcs[0]": "data:/data/{}:claim",
    "history.path": "s3://bucket/{}",
}
"""Where a payload goes inside a value of the key's own shape, so that it meets the
checks behind the first character (the URL scheme, an absolute path, an image name)."""


def _stems(schema: dict[str, Any], path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every string the schema allows: keys, list items (index 0), mapping
    keys and values (``<key>``, ``<value>``)."""
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    if "string" in types and path:
        yield path
    for key, sub in schema.get("properties", {}).items():
        yield from _stems(sub, (*path, key))
    if isinstance(schema.get("items"), dict):
        yield from _stems(schema["items"], (*path, 0))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        yield (*path, "<key>")
        yield from _stems(extra, (*path, "<value>"))


STRING_PATHS = sorted(set(_stems(config_schema())), key=str)


def dotted(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def with_value(base: dict[str, Any], path: tuple[Any, ...], value: str) -> dict[str, Any]:
    """``base`` with ``value`` at ``path`` (a mapping key or value where the path says)."""
    config = copy.deepcopy(base)
    node: Any = config
    for part, after in itertools.pairwise(path):
        if after in ("<key>", "<value>"):
            counterpart = {"images": "llama3.1-nemo"}.get(part, "kubernetes.io/hostname")
            node[part] = {value: "x"} if after == "<key>" else {counterpart: value}
            if part == "images" and after == "<key>":
                node[part] = {value: EXAMPLE_IMAGES["llama3.1-nemo"]}
            return config
        empty: Any = [] if isinstance(after, int) else {}
        if isinstance(part, int):
            while len(node) <= part:
                node.append(empty)
        elif part not in node or node[part] is None or not isinstance(node[part], type(empty)):
            node[part] = empty
        node = node[part]
    last = path[-1]
    if isinstance(last, int):
        node[:] = [value]
    else:
        node[last] = value
    return config


def stem_key(path: tuple[Any, ...]) -> str:
    """The key a refusal must name, list indexes and mapping markers left out."""
    return re.sub(r"\[\d+\]", "", dotted(tuple(p for p in path if p not in ("<key>", "<value>"))))


def relevant(launcher: str, path: tuple[Any, ...]) -> bool:
    """A launcher's own block, and every key outside the platforms' blocks."""
    return path[0] not in ("kubernetes", "runai") or launcher.startswith(path[0])


RECORDER = """import json, os, sys
argv = sys.argv[1:]  # the name it was called by, then its arguments
record = os.environ.get("LLMBENCH_TEST_RECORD")
if record:
    with open(record, "a") as out:
        out.write(json.dumps({"argv": argv, "env": dict(os.environ)}) + "\\n")
if argv[1:2] == ["-c"]:  # launch.sh asks the interpreter where llmbench is
    os.execv(sys.executable, [sys.executable, *argv[1:]])
"""
TOOL = """#!/bin/bash
# SIGTERM ignored (kept across exec): launch.sh stops its background samplers with it
# when the ranks end, and the record must still be written.
trap '' TERM
exec {python} {recorder} "$0" "$@"
"""
TOOLS = ("srun", "squeue", "scontrol", "sudo", "numactl", "nsys", "nvidia-smi")


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Recorders for the outside tools (on PATH) and for the interpreter ($PYTHON and, in a
    pod, python3): each appends its argv and environment to $LLMBENCH_TEST_RECORD."""
    bin_dir, pod_bin = tmp_path / "bin", tmp_path / "pod-bin"
    bin_dir.mkdir()
    pod_bin.mkdir()
    recorder = tmp_path / "recorder.py"
    recorder.write_text(RECORDER)
    text = TOOL.format(python=shlex.quote(sys.executable), recorder=shlex.quote(str(recorder)))
    for path in [*(bin_dir / t for t in TOOLS), bin_dir / "python", pod_bin / "python3"]:
        path.write_text(text)
        path.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "42")  # launcher srun runs inside an allocation
    monkeypatch.setenv("LLMB_TEST_SECRET", "not-a-secret")  # runai's launch.sh needs it
    monkeypatch.delenv("LLMBENCH_IMAGE", raising=False)
    return {"python": bin_dir / "python", "pod": pod_bin}


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def arrived(key: str, value: str, calls: list[dict[str, Any]]) -> bool:
    """Whether ``value`` reached a command whole, where launch.sh puts ``key``."""
    argv = [arg for call in calls for arg in call["argv"]]
    env = [call["env"] for call in calls]
    if key == "stage_path":
        stage = str(Path(value).resolve())
        mounts_ok = all(
            f"{stage}:{stage}" in arg for arg in argv if arg.startswith("--container-mounts=")
        )
        return mounts_ok and any(e.get("LLMBENCH_STAGE_PATH") == stage for e in env)
    pairs = {pair for call in calls for pair in itertools.pairwise(call["argv"])}
    if key == "telemetry.root":
        return ("--root", value) in pairs
    option = {
        "kubernetes.context": "context",
        "runai.context": "context",
        "runai.app_id": "app-id",
        "runai.project": "project",
        "runai.base_url": "base-url",
    }[key]
    return f"--{option}={value}" in argv or (f"--{option}", value) in pairs


ARRIVES = {
    "local": {"stage_path"},
    "srun": {"stage_path"},
    "srun-enroot": {"stage_path", "telemetry.root"},
    "kubernetes": {"stage_path", "kubernetes.context"},
    "runai": {"stage_path", "runai.context", "runai.app_id", "runai.project", "runai.base_url"},
}
"""The keys whose values reach a command of each launcher (launch.sh's options or its
environment); every other accepted value must reach none."""


OPERATOR_ENV = {
    "RANK": "0",
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": "29500",
    "PET_NODE_RANK": "0",
    "PET_NNODES": "1",
}
"""What the Trainer or the PyTorch operator sets in node 0's container."""


def run_pod(
    attempt: Path, launcher: str, tools: dict[str, Path], record: Path, marker: Path
) -> None:
    """Node 0's container command, as the platform runs it (Run:ai splits ``args`` as a
    shell would), with the run spec in its environment and python3 the recorder."""
    if launcher == "kubernetes":
        trainer = yaml.safe_load((attempt / "manifest.yaml").read_text())["spec"]["trainer"]
        command, env_list = trainer["command"], trainer["env"]
    else:
        spec = json.loads((attempt / "payload.json").read_text())["spec"]
        command = [spec["command"], *shlex.split(spec["args"])]
        env_list = spec["environmentVariables"]
    env = {e["name"]: e["value"] for e in env_list}
    env.update(
        OPERATOR_ENV,
        PATH=f"{tools['pod']}:/usr/bin:/bin",
        TMPDIR=str(attempt),
        LLMBENCH_TEST_RECORD=str(record),
    )
    proc = subprocess.run(command, env=env, cwd=attempt, capture_output=True, timeout=60)
    assert not marker.exists(), (launcher, command)
    assert proc.returncode == 0, proc.stderr[-2000:]
    pod_calls = [c for c in records(record) if c["argv"][0].endswith("python3")]
    assert pod_calls and "torch.distributed.run" in pod_calls[-1]["argv"], pod_calls


@pytest.mark.parametrize("launcher", list(BASES))
def test_no_config_value_runs_as_a_command(
    launcher: str, tools: dict[str, Path], tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "INJECTED"
    accepted = refused = 0
    for path in STRING_PATHS:
        if not relevant(launcher, path):
            continue
        template = TEMPLATES.get(dotted(path), "{}")
        for payload in PAYLOADS:
            value = template.format(payload.replace(MARK, str(marker)))
            config = with_value(BASES[launcher], path, value)
            try:
                _, specs = check_config(config, "config.yaml", [tmp_path, REPO], host=HERE)
                check_platforms(specs, "config.yaml")
            except ConfigError as err:
                line = str(err)
                assert "\n" not in line and stem_key(path) in re.sub(r"\[\d+\]", "", line), (
                    path,
                    line,
                )
                refused += 1
                continue
            accepted += 1
            (spec,) = specs
            run_dir = tmp_path / "runs" / f"{accepted}"
            record = tmp_path / f"record-{accepted}.jsonl"
            env = {
                **launch_env(spec, config.get("stage_path", "results/stage"), None),
                "LLMBENCH_PYTHON": str(tools["python"]),
                "LLMBENCH_TEST_RECORD": str(record),
            }
            telemetry = TelemetrySettings.from_config(config.get("telemetry"))
            outcome = run_attempt(
                spec, run_dir, env=env, telemetry=telemetry if launcher == "srun-enroot" else None
            )
            attempt = run_dir / outcome["attempt_dir"]
            log = (attempt / "train.log").read_text()
            assert not marker.exists(), (launcher, path, value)
            assert outcome["exit_code"] == 0, (path, value, log[-2000:])
            calls = records(record)
            assert calls, (path, value, "launch.sh did not reach its command", log[-2000:])
            if launcher in ("kubernetes", "runai"):
                run_pod(attempt, launcher, tools, tmp_path / f"pod-{accepted}.jsonl", marker)
            assert not marker.exists(), (launcher, path, value)
            stem = stem_key(path)
            if stem in ARRIVES[launcher]:
                assert arrived(stem, value, calls), (launcher, path, value)
            else:
                launch = (attempt / "launch.sh").read_text()
                seen = [a for c in calls for a in c["argv"]] + [
                    v for c in calls for v in c["env"].values()
                ]
                assert value not in launch and not any(value in s for s in seen), (path, value)
    assert accepted and refused  # both sides of the check were exercised
    assert not marker.exists()


HOSTILE_SRC = "/opt/src\"; touch {m}; \"$(touch {m})`touch {m}`'; touch {m}; '"


def test_pod_command_quotes_the_source_path_whatever_it_holds(tools, tmp_path: Path) -> None:
    """The node script quotes ``llmbench_src`` by construction, even for a value the config
    check would refuse: it arrives whole as the first PYTHONPATH entry."""
    marker = tmp_path / "INJECTED"
    src = HOSTILE_SRC.format(m=marker)
    config = tiny_config((1,), launcher="kubernetes", kubernetes={"image": SITE_IMAGE})
    (spec,) = check_config(config, "config.yaml", [REPO], host=HERE)[1]
    record = tmp_path / "pod.jsonl"
    command = node_command(spec, src, "python3 -m torch.distributed.run")
    env = {
        "PATH": f"{tools['pod']}:/usr/bin:/bin",
        "TMPDIR": str(tmp_path),
        "LLMBENCH_RUN_SPEC": "{}",
        "PYTHONPATH": "/already/there",
        "LLMBENCH_TEST_RECORD": str(record),
    }
    proc = subprocess.run(command, env=env, capture_output=True, timeout=60)
    assert not marker.exists()
    assert proc.returncode == 0, proc.stderr
    (call,) = records(record)
    assert call["env"]["PYTHONPATH"] == f"{src}:/already/there"
    assert call["argv"][1:] == [
        "-m",
        "torch.distributed.run",
        "-m",
        "llmbench.ranks.embedded.train",
        "--spec",
        "run_spec.json",
    ]
    assert not marker.exists()


@pytest.mark.workflow
def test_hostile_source_path_on_the_standin_runs_nothing_extra(tmp_path: Path, monkeypatch) -> None:
    """KS8 end to end: the real kubernetes client submits a TrainJob whose site values
    (built past the config check) hold injections in ``llmbench_src``; the API stand-in
    runs node 0's command on this machine, the embedded trainer trains, and nothing else
    runs."""
    from llmbench.launch.kubernetes_watch import submit_and_wait
    from llmbench.parsers import parse_log

    marker = tmp_path / "INJECTED"
    config = tiny_config(
        (1,),
        launcher="kubernetes",
        steps=12,
        window=[5, 10],
        kubernetes={"image": SITE_IMAGE, "poll_s": 0.2},
    )
    (spec,) = check_config(config, "config.yaml", [REPO], host=HERE)[1]
    site = KubernetesSite.from_config(
        {**spec.platform, "llmbench_src": HOSTILE_SRC.format(m=marker)}
    )
    manifest = yaml.safe_load(render_manifest_yaml(spec, site, attempt=1))
    folder = tmp_path / "standin"
    folder.mkdir()
    standin = StandInApiServer(folder).start()
    try:
        monkeypatch.setenv("KUBECONFIG", str(standin.kubeconfig(tmp_path / "kubeconfig")))
        record, progress = tmp_path / "platform.json", tmp_path / "platform.log"
        code = submit_and_wait(manifest, record, progress, poll_s=0.2, keep=False)
    finally:
        standin.stop()
    assert not marker.exists()
    (workload,) = standin.workloads.values()
    assert code == 0, workload.log_path.read_text()[-3000:]
    assert parse_log(workload.log_path, (5, 10)).summary.n_iterations == 12
