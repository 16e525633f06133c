"""The third bad-input probe's config and site-value cases (history, preflight, telemetry,
watchdog and failures keys; Kubernetes and Run:ai site values), each as the probe ran it:
the experiment file through `llmbench plan --config config.yaml --site site.yaml`, and the
same two files through the workflow's check (the profile's site file merged over the
experiment, as `configfile:` does), which must give the same line; a few through a real
`snakemake -n` (and one real run) with a copy of the profile."""

from __future__ import annotations

import copy
import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmbench.errors import ConfigError
from llmbench.workflow.config_check import check_workflow_config
from tests.bad_inputs.cases import BASE
from tests.bad_inputs.checks import PLAN_SUMMARY, assert_untouched, one_error_line, run_cli
from tests.helpers import REPO, snakemake

KUBERNETES = {"launcher": "kubernetes", "kubernetes": {"image": "example/llmbench:test"}}
RUNAI = {
    "launcher": "runai",
    "runai": {
        "base_url": "https://127.0.0.1:1/api/v1",
        "app_id": "llmb-bench",
        "project": "bench",
        "image": "example/llmbench:test",
    },
}
PASSWORD = "pr0be-PassW0rd"
"""A made-up password inside a URL: it must be in no message and no file."""
GPU = {
    "workload": "llama3.1-nemo",
    "sizes": ["8b"],
    "dtypes": ["bf16"],
    "gpu_type": "h100",
    "scales": [8],
}


@dataclass(frozen=True)
class Case:
    id: str
    site: dict[str, Any]  # the profile's site file (`--site`)
    needles: tuple[str, ...] = ()  # words of the one error line; empty: accepted
    config: dict[str, Any] = field(default_factory=lambda: copy.deepcopy(BASE))

    @property
    def accepted(self) -> bool:
        return not self.needles

    def write(self, folder: Path) -> list[str]:
        """The files, and `plan`'s arguments for them."""
        (folder / "config.yaml").write_text(yaml.safe_dump(self.config, sort_keys=False))
        (folder / "site.yaml").write_text(yaml.safe_dump(self.site, sort_keys=False))
        return ["plan", "--config", "config.yaml", "--site", "site.yaml"]


def kube(**values: Any) -> dict[str, Any]:
    return {**KUBERNETES, "kubernetes": {**KUBERNETES["kubernetes"], **values}}


def runai(**values: Any) -> dict[str, Any]:
    return {**RUNAI, "runai": {**RUNAI["runai"], **values}}


def experiment(**top: Any) -> dict[str, Any]:
    return {**copy.deepcopy(BASE), **top}


def scales(*values: int) -> dict[str, Any]:
    return {**BASE, "sweeps": [{**BASE["sweeps"][0], "scales": list(values)}]}


# The probe's BAD cases: values a platform would accept (exit 0) or a shell would run.
BAD = [
    Case("K4", {}, ("history.add", "history.path"), experiment(history={"add": True})),
    Case(
        "K12",
        {},
        ("preflight.iterations", "1000000000000", "1000"),
        experiment(preflight={"iterations": 10**12}),
    ),
    Case(
        "K13",
        {},
        ("preflight.max_message_bytes", str(10**30), "68719476736"),
        experiment(preflight={"max_message_bytes": 10**30}),
    ),
    Case("KS3", kube(namespace="n" * 80), ("kubernetes.namespace", "n" * 80, "at most 63")),
    Case(
        "KS4",
        kube(queue="q; touch /tmp/pwned"),
        ("kubernetes.queue", "'q; touch /tmp/pwned'", "LocalQueue"),
    ),
    Case("KS5", kube(queue="q\nx"), ("kubernetes.queue", "'q\\nx'", "label value")),
    Case(
        "KS6",
        kube(node_selector={"zone": "$(id)\n"}),
        ("kubernetes.node_selector.zone", "'$(id)\\n'", "label value"),
    ),
    Case(
        "KS7",
        kube(node_selector={"bad key!": "x"}),
        ("kubernetes.node_selector", "'bad key!'", "label key"),
    ),
    Case(
        "KS8",
        kube(llmbench_src='/x"; touch INJ_K8S; "'),
        ("kubernetes.llmbench_src", "touch INJ_K8S", "absolute path"),
    ),
    Case("KS9", kube(shm_gi=10**12), ("kubernetes.shm_gi", "1000000000000", "4096")),
    Case("KS11", kube(poll_s=1e300), ("kubernetes.poll_s", "1e+300", "3600")),
    Case(
        "KS15",
        kube(gpu_resource="nvidia.com/gpu; rm -rf /"),
        ("kubernetes.gpu_resource", "'nvidia.com/gpu; rm -rf /'", "extended resource"),
    ),
    Case(
        "KS16",
        kube(image="not an image; rm -rf /"),
        ("kubernetes.image", "'not an image; rm -rf /'", "namespace/name:tag"),
    ),
    Case("KS18", KUBERNETES, ("cpux4096", "4096 CPU ranks", "768"), scales(4096)),
    Case(
        "RS6",
        runai(base_url=f"https://user:{PASSWORD}@127.0.0.1:1/api/v1"),
        ("runai.base_url", "***@127.0.0.1:1", "$RUNAI_APP_SECRET"),
    ),
]

# Refused although the probe found them accepted harmlessly (OK), and the same holes on
# values the probe did not try: a value ending in a line break passed every `$` pattern.
MORE = [
    Case(
        "RS8",
        runai(project="bench\n$(id)"),
        ("runai.project", "'bench\\n$(id)'", "control character"),
    ),
    Case("KS2-end", kube(namespace="ns\n"), ("kubernetes.namespace", "'ns\\n'")),
    Case(
        "K14-end",
        {"preflight": {"nodes": ["n1\n"]}},
        ("preflight.nodes[0]", "'n1\\n'"),
    ),
    Case(
        "slurm-end",
        {"slurm": {"reservation": "r\n"}},
        ("slurm.reservation", "'r\\n'"),
    ),
    Case("registry-end", {"registry": "mirror.example.com\n"}, ("registry", "\\n")),
    Case("cluster-end", {"history": {"cluster": "c1\n"}}, ("history.cluster", "'c1\\n'")),
    Case(
        "secret-env-end",
        runai(secret_env="RUNAI_APP_SECRET\n"),
        ("runai.secret_env", "'RUNAI_APP_SECRET\\n'"),
    ),
    Case(
        "image-end",
        kube(image="example/llmbench:test\n"),
        ("kubernetes.image", "'example/llmbench:test\\n'"),
    ),
    Case(
        "images-end",
        {},
        ("images.llama3.1-nemo", "'nvidia/nemo:25.07\\n'"),
        experiment(images={"llama3.1-nemo": "nvidia/nemo:25.07\n"}),
    ),
    Case(
        "history-credentials",
        {"history": {"path": f"s3://key:{PASSWORD}@bucket/hist"}},
        ("history.path", "s3://***@bucket/hist", "AWS_ACCESS_KEY_ID"),
    ),
    Case(
        "runai-url-quote",
        runai(base_url='https://127.0.0.1:1/api/v1"x'),
        ("runai.base_url", "RFC 3986"),
    ),
    Case("runai-image", runai(image="not an image"), ("runai.image", "'not an image'")),
    Case("runai-src", runai(llmbench_src="src"), ("runai.llmbench_src", "'src'")),
    Case(
        "stage-comma",
        {"stage_path": "/stage,/etc:/etc"},
        ("stage_path", "'/stage,/etc:/etc'", "container mounts"),
    ),
    Case("runtime", kube(runtime="Torch Runtime"), ("kubernetes.runtime", "'Torch Runtime'")),
    Case(
        "pvc-claim",
        kube(pvcs=["data:/data:claim..x"]),
        ("kubernetes.pvcs[0]: claimName", "'claim..x'"),
    ),
    Case(
        "toleration-key",
        kube(tolerations=[{"key": "a b", "operator": "Exists"}]),
        ("kubernetes.tolerations[0].key", "'a b'"),
    ),
    Case(
        "toleration-field",
        kube(tolerations=[{"key": "a", "operatr": "Exists"}]),
        ("kubernetes.tolerations[0]", "'operatr'"),
    ),
    Case(
        "poll-over-stall",
        kube(poll_s=100),
        ("kubernetes.poll_s", "100", "stall allowance"),
    ),
    Case("runai-poll", runai(poll_s=10**6), ("runai.poll_s", "1000000", "3600")),
    Case("runai-ranks", RUNAI, ("cpux4096", "launcher runai", "768"), scales(4096)),
]

# The probe's GOOD cases of B5 and B6: still refused, with the key and the value named.
GOOD = [
    Case("K1", {"history": {"path": ""}}, ("history.path", "''")),
    Case("K2", {"history": {"cluster": "../x"}}, ("history.cluster", "'../x'")),
    Case("K3", {}, ("history.add", "'yes'"), experiment(history={"add": "yes"})),
    Case("K5", {}, ("history.trend_days", "0"), experiment(history={"trend_days": 0})),
    Case("K6", {}, ("history.trend_days", "nan"), experiment(history={"trend_days": math.nan})),
    Case("K7", {}, ("history.trend_days", "1000000000"), experiment(history={"trend_days": 10**9})),
    Case("K8", {}, ("history", "'days'"), experiment(history={"days": 30})),
    Case(
        "K9",
        {},
        ("preflight.min_fraction", "nan"),
        experiment(preflight={"min_fraction": math.nan}),
    ),
    Case(
        "K10", {}, ("preflight.min_fraction", "-0.5"), experiment(preflight={"min_fraction": -0.5})
    ),
    Case("K11", {}, ("preflight.min_fraction", "2"), experiment(preflight={"min_fraction": 2})),
    Case(
        "K14",
        {"preflight": {"nodes": ["n1; touch /tmp/pwned"]}},
        ("preflight.nodes[0]", "'n1; touch /tmp/pwned'"),
    ),
    Case("K15", {"preflight": {"nodes": []}}, ("preflight.nodes", "[]")),
    Case("K16", {}, ("preflight", "'yes'"), experiment(preflight="yes")),
    Case("K17", {}, ("preflight", "'enable'"), experiment(preflight={"enable": True})),
    Case("K18", {}, ("preflight.iterations", "2.5"), experiment(preflight={"iterations": 2.5})),
    Case("K19", {}, ("telemetry.period_ms", "nan"), experiment(telemetry={"period_ms": math.nan})),
    Case("K20", {}, ("telemetry.period_ms", "5"), experiment(telemetry={"period_ms": 5})),
    Case("K21", {}, ("telemetry.period_ms", "-250"), experiment(telemetry={"period_ms": -250})),
    Case("K22", {}, ("telemetry.enabled", "'no'"), experiment(telemetry={"enabled": "no"})),
    Case("K24", {}, ("telemetry", "'period'"), experiment(telemetry={"period": 250})),
    Case("K25", {}, ("watchdog.startup_s", "-1"), experiment(watchdog={"startup_s": -1})),
    Case("K26", {}, ("watchdog.stall_s", "inf"), experiment(watchdog={"stall_s": math.inf})),
    Case("K27", {}, ("watchdog.stall_s", "1.5"), experiment(watchdog={"stall_s": 1.5})),
    Case("K28", {}, ("watchdog.stall_s", "1000000000"), experiment(watchdog={"stall_s": 10**9})),
    Case("K29", {}, ("watchdog", "'stall'"), experiment(watchdog={"stall": 60})),
    Case("K30", {}, ("failures.infra_retries", "-1"), experiment(failures={"infra_retries": -1})),
    Case(
        "K31", {}, ("failures.infra_retries", "1000"), experiment(failures={"infra_retries": 1000})
    ),
    Case("K32", {}, ("failures.infra_retries", "2.0"), experiment(failures={"infra_retries": 2.0})),
    Case(
        "K33", {}, ("failures.keep_failed", "'true'"), experiment(failures={"keep_failed": "true"})
    ),
    Case("K34", {}, ("failures", "'retries'"), experiment(failures={"retries": 3})),
    Case("KS1", kube(namespace="Bad_NS"), ("kubernetes.namespace", "'Bad_NS'")),
    Case("KS2", kube(namespace="ns\nx"), ("kubernetes.namespace", "'ns\\nx'")),
    Case("KS10", kube(poll_s=math.nan), ("kubernetes.poll_s", "nan")),
    Case("KS12", kube(api="mpijob"), ("kubernetes.api", "'mpijob'")),
    Case(
        "KS13",
        kube(pvcs=["data:relative/path:claim"]),
        ("kubernetes.pvcs[0]", "'data:relative/path:claim'"),
    ),
    Case("KS14", kube(tolerations=["x"]), ("kubernetes.tolerations[0]", "'x'")),
    Case("KS17", kube(nodes=4), ("kubernetes", "'nodes'")),
    Case("KS19", {"launcher": "kubernetes"}, ("kubernetes.image", "not set")),
    Case(
        "RS1",
        yaml.safe_load((REPO / "profiles/runai/site.yaml").read_text()),
        ("runai.base_url", "not set"),
    ),
    Case("RS2", runai(base_url="ftp://x"), ("runai.base_url", "'ftp://x'")),
    Case("RS3", runai(secret_env="BAD-NAME"), ("runai.secret_env", "'BAD-NAME'")),
    Case("RS4", runai(secret_env="1ABC"), ("runai.secret_env", "'1ABC'")),
    Case("RS9", runai(poll_s=-1), ("runai.poll_s", "-1")),
    Case("RS10", runai(app_id=""), ("runai.app_id", "not set")),
    Case("RS11", runai(pvcs=["a:b:c"]), ("runai.pvcs[0]", "'a:b:c'")),
    Case("RS12", runai(token="xyz"), ("runai", "'token'")),
    Case(
        "RS13",
        RUNAI,
        ("variant='profile'", "runai"),
        experiment(
            sweeps=[{**GPU, "variants": ["profile"]}], images={"llama3.1-nemo": "nvidia/nemo:25.07"}
        ),
    ),
]

# Accepted before and after: the shipped examples of each profile, and the probe's OK
# cases that stay accepted (a telemetry root that is not there; a plain-http Run:ai URL;
# an unset secret variable, which `plan` names in a warning and a real run refuses).
EXAMPLE_SITE = kube(
    namespace="llm-bench",
    queue="h100-queue",
    runtime="torch-distributed",
    shm_gi=256,
    pvcs=["workspace:/workspace:bench-workspace"],
    node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
    tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    gpu_resource="nvidia.com/gpu",
    llmbench_src="/workspace/llmbench/src",
    poll_s=30,
    context="-my context $(id)",
)
ACCEPTED = [
    Case("kubernetes-example", EXAMPLE_SITE),
    Case("kubernetes-spread", {**KUBERNETES, "ranks_per_node": 64}, (), scales(4096)),
    Case("runai-example", runai(llmbench_src="/workspace/llmbench/src", context="ctx")),
    Case("K23", {"telemetry": {"root": "/no/such/root"}}),
    Case("RS7", runai(base_url="http://127.0.0.1:1/api/v1")),
    Case("RS5", runai(secret_env="LLMB_PROBE_UNSET_SECRET")),
    Case("history-url", {"history": {"path": "s3://bucket/hist?region=eu-west-1"}}),
    Case("bounds-max", {"preflight": {"iterations": 1000, "max_message_bytes": 2**36}}),
]
REFUSED = BAD + MORE + GOOD
ALL = REFUSED + ACCEPTED


def workflow_verdict(case: Case, folder: Path) -> str | None:
    """What the workflow's main process says (workflow/rules/common.smk): None or its line."""
    case.write(folder)
    site = yaml.safe_load((folder / "site.yaml").read_text()) or {}
    try:
        check_workflow_config(site, "config.yaml", [folder, REPO])
    except ConfigError as err:
        return str(err)
    return None


def _blamed(line: str) -> tuple[str, str]:
    """(the file a line names first, the rest)."""
    name, _, rest = line.partition(": ")
    return name, rest


@pytest.mark.parametrize("case", REFUSED, ids=lambda c: c.id)
def test_plan_refuses_with_one_line(case: Case, sandbox: Path, capsys) -> None:
    """Named: the config, or for a launcher's site value the --site file that chose the
    launcher (probe 4, R23)."""
    code, out, err = run_cli(case.write(sandbox), capsys)
    assert code == 2 and out == "", (code, err)
    line = one_error_line(err, *case.needles, prefix="llmbench plan: error: ")
    assert _blamed(line.removeprefix("llmbench plan: error: "))[0] in ("config.yaml", "site.yaml")
    assert PASSWORD not in line
    assert_untouched(sandbox)


@pytest.mark.parametrize("case", ALL, ids=lambda c: c.id)
def test_plan_and_workflow_agree(case: Case, sandbox: Path, capsys, monkeypatch) -> None:
    """The same verdict and the same line: one check for both."""
    monkeypatch.delenv("LLMB_PROBE_UNSET_SECRET", raising=False)
    workflow = workflow_verdict(case, sandbox)
    code, out, err = run_cli(case.write(sandbox), capsys)
    if case.accepted:
        assert workflow is None and code == 0, (workflow, err)
        assert PLAN_SUMMARY.search(out), out[-300:]
    else:  # the workflow has the site values, not their file: it names the config
        assert code == 2 and workflow is not None
        plan_file, plan_rest = _blamed(err.strip().removeprefix("llmbench plan: error: "))
        assert _blamed(workflow) == ("config.yaml", plan_rest), (workflow, err)
        assert plan_file == "config.yaml" or (plan_file, "launcher" in case.site) == (
            "site.yaml",
            True,
        ), err
    assert_untouched(sandbox)


def test_plan_names_an_unset_secret_variable(sandbox: Path, capsys, monkeypatch) -> None:
    """RS5: `plan` may run where the sweep will not; it warns and exits 0."""
    monkeypatch.delenv("LLMB_PROBE_UNSET_SECRET", raising=False)
    case = next(c for c in ACCEPTED if c.id == "RS5")
    code, _, err = run_cli(case.write(sandbox), capsys)
    assert code == 0
    one_error_line(err, "$LLMB_PROBE_UNSET_SECRET", "export", prefix="llmbench: warning: ")


def profile_copy(name: str, site: dict[str, Any], folder: Path) -> Path:
    """profiles/<name> with the case's site file in place of its own."""
    profile = folder / "profile"
    shutil.copytree(REPO / "profiles" / name, profile)
    (profile / "site.yaml").write_text(yaml.safe_dump(site, sort_keys=False))
    return profile


DRY_RUN_CASES = ["K4", "K12", "KS3", "KS8", "KS16", "KS18", "RS6"]


@pytest.mark.workflow
@pytest.mark.parametrize("case", [c for c in BAD if c.id in DRY_RUN_CASES], ids=lambda c: c.id)
def test_real_dry_run_refuses_the_same_way(case: Case, sandbox: Path, capsys) -> None:
    """`snakemake -n` with the profile (its site file holding the value): exit 1, the same
    one line as `plan`, nothing written."""
    case.write(sandbox)
    _, _, plan_err = run_cli(case.write(sandbox), capsys)
    name = case.site.get("launcher", "default")
    profile = profile_copy(name if name != "local" else "default", case.site, sandbox.parent)
    proc = snakemake(sandbox, "-n", "--cores", "1", "--profile", str(profile))
    assert proc.returncode == 1, proc.stderr[-3000:]
    ours = [line for line in proc.stderr.splitlines() if line.startswith("llmbench")]
    assert len(ours) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert ours[0] == plan_err.strip().replace("llmbench plan: error:", "llmbench: error:")
    assert PASSWORD not in proc.stdout + proc.stderr
    written = [p for p in sandbox.rglob("*") if p.is_file() and p.name != "site.yaml"]
    assert written and not [p for p in written if PASSWORD.encode() in p.read_bytes()]
    assert_untouched(sandbox)


@pytest.mark.workflow
def test_real_run_refuses_an_unset_secret_before_any_job(sandbox: Path, monkeypatch) -> None:
    """RS5: the dry run passes (it submits nothing), the real run stops before its first
    job with one line, and nothing is submitted or written under results/."""
    monkeypatch.delenv("LLMB_PROBE_UNSET_SECRET", raising=False)
    case = next(c for c in ACCEPTED if c.id == "RS5")
    case.write(sandbox)
    profile = profile_copy("runai", case.site, sandbox.parent)
    dry = snakemake(sandbox, "-n", "--cores", "1", "--profile", str(profile))
    assert dry.returncode == 0, dry.stderr[-3000:]
    proc = snakemake(sandbox, "--cores", "1", "--profile", str(profile))
    assert proc.returncode == 1
    ours = [line for line in proc.stderr.splitlines() if line.startswith("llmbench")]
    assert len(ours) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    one_error_line(ours[0], "$LLMB_PROBE_UNSET_SECRET", prefix="llmbench: error: runai")
    assert_untouched(sandbox)
