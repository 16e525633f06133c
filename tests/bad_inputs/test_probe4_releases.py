"""Bad-input probe 4 (notes/bad-input-probe-4.md), releases: every case of "release
configs" (PL*) and "recipes --release" (RC*), GOOD and formerly OK, by its case id. A
release name is normalised (case, surrounding spaces) or refused in one line with the
list (``Catalog.release_name``, the one rule); a config across releases, or asking a
later release a variant its suite does not run, says in one line what will happen;
``recipes`` says why a filter matched nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.bad_inputs.checks import assert_untouched, one_error_line, run_cli
from tests.helpers import REPO, snakemake

MB70 = {"workload": "llama3.1-mbridge", "sizes": ["70b"], "dtypes": ["fp8"], "gpu_type": "h100",
        "scales": [512], "release": "v26.08"}  # fmt: skip
DS = {"workload": "deepseek-v3-mbridge", "release": "v26.08", "sizes": ["671b"],
      "dtypes": ["bf16"], "gpu_type": "gb300", "scales": [512]}  # fmt: skip
TINY = {"workload": "tiny-llama", "sizes": ["tiny"], "dtypes": ["fp32"], "gpu_type": "cpu",
        "scales": [1]}  # fmt: skip
NEMO = {"workload": "llama3.1-nemo", "sizes": ["8b"], "dtypes": ["bf16"], "gpu_type": "h100",
        "scales": [8]}  # fmt: skip
ALIAS_BOMB = (
    "sweeps:\n  - workload: &g [&f [&e [&d [&c [&b [&a [lol,lol,lol,lol,lol,lol,lol,lol,lol],"
    "*a,*a,*a,*a,*a,*a,*a,*a],*b,*b,*b,*b,*b,*b,*b,*b],*c,*c,*c,*c,*c,*c,*c,*c],*d,*d,*d,*d,"
    "*d,*d,*d,*d],*e,*e,*e,*e,*e,*e,*e,*e],*f,*f,*f,*f,*f,*f,*f,*f]\n    sizes: [8b]\n"
    "    dtypes: [bf16]\n    gpu_type: h100\n    scales: [8]\n"
)
PREFIX = "llmbench plan: error: config.yaml: "

REFUSED = {
    "PL1": ({"sweeps": [{**MB70, "release": "v99.99"}]},
            ("sweeps[0].release: 'v99.99' is not a release", "allowed: dgxc-2025, v26.08")),
    "PL3": ({"sweeps": [{**MB70, "release": 26.08}]},
            ("sweeps[0].release: 26.08 is a number, not text", 'quoted: "26.08"')),
    "PL4": ({"sweeps": [{**MB70, "release": 2608}]}, ("sweeps[0].release: 2608 is a number",)),
    "PL5": ({"sweeps": [{**MB70, "release": ["v26.08"]}]},
            ("sweeps[0].release: ['v26.08'] is not of type 'string'",)),
    "PL6": ({"sweeps": [{**MB70, "release": None}]},
            ("sweeps[0].release: None is not of type 'string'",)),
    "PL7": ({"sweeps": [{**MB70, "release": ""}]},
            ("sweeps[0].release: '' is not a release", "allowed: dgxc-2025, v26.08")),
    "PL9": ({"sweeps": [{**MB70, "release": "v26.8"}]}, ("'v26.8' is not a release",)),
    "PL10": ({"sweeps": [{**MB70, "release": {"v": 26.08}}]},
             ("sweeps[0].release: {'v': 26.08} is not of type 'string'",)),
    "PL11": ({"sweeps": [{**MB70, "release": True}]}, ("sweeps[0].release: True is not of",)),
    "PL12": ({"sweeps": [{**MB70, "release": "all"}]},
             ("'all' selects every release in `llmbench recipes`", "allowed: dgxc-2025, v26.08")),
    "PL13": ({"sweeps": [{**TINY, "release": "v26.08"}]},
             ("sweeps[0].release: 'v26.08' is not allowed for this workload; allowed: dgxc-2025",)),
    "PL14": ({"sweeps": [{**NEMO, "release": "v26.08"}]},
             ("release=v26.08 is not a release of llama3.1-nemo 8b; allowed: dgxc-2025",)),
    "PL15": ({"sweeps": [{**NEMO, "workload": "nemotron4-nemo", "sizes": ["15b"],
                          "scales": [16], "release": "v26.08"}]},
             ("release=v26.08 is not a release of nemotron4-nemo 15b; allowed: dgxc-2025",)),
    "PL16": ({"sweeps": [{**DS, "gpu_type": "h100"}]},
             ("gpus=512 is not a scale of deepseek-v3-mbridge 671b bf16 on h100; allowed: 1024",)),
    "PL17": ({"sweeps": [{**MB70, "dtypes": ["nvfp4"]}]},
             ("gpu_type=h100 is not a gpu_type of llama3.1-mbridge 70b nvfp4 in release v26.08",)),
    "PL18": ({"sweeps": [{**DS, "scales": [8]}]},
             ("gpus=8 is not a scale of deepseek-v3-mbridge 671b bf16 on gb300",)),
    "PL19": ({"sweeps": [{**MB70, "sizes": ["8b"]}]},
             ("release=v26.08 is not a release of llama3.1-mbridge 8b; allowed: dgxc-2025",)),
    "PL20": ({"sweeps": [{**DS, "release": "spec"}]},
             ("release=dgxc-2025 is not a release of deepseek-v3-mbridge 671b; allowed: v26.08",)),
    "PL21": ({"sweeps": [{**DS, "workload": "qwen3-mbridge", "sizes": ["30b-a3b"]}]},
             ("gpus=512 is not a scale of qwen3-mbridge 30b-a3b bf16 on gb300",)),
    "PL22": ({"sweeps": [{**MB70, "dtypes": ["mxfp8"]}]},
             ("sweeps[0].dtypes[0]: 'mxfp8' is not allowed; allowed: fp32, bf16, fp8, nvfp4",)),
    "PL23": ({"sweeps": [{**MB70, "dtypes": ["NVFP4"]}]}, ("'NVFP4' is not allowed",)),
    "PL24": ({"sweeps": [{**TINY, "dtypes": ["nvfp4"]}]},
             ("sweeps[0].dtypes: 'nvfp4' is not allowed for this workload; allowed: fp32, bf16",)),
    "PL27": ({"sweeps": [MB70], "release": "v26.08"},
             ("(top level): Additional properties are not allowed ('release' was unexpected)",)),
    "PL29": ({"sweeps": [MB70, MB70]},
             ("sweeps[1]: run llama3.1-mbridge_70b_fp8_h100x512-v26.08_perf is already in "
              "sweeps[0]",)),
    "PL30": ({"sweeps": [{**MB70, "release": "spec", "dtypes": ["bf16"], "scales": [64]},
                         {**MB70, "dtypes": ["bf16"], "scales": [64]}]},
             ("sweeps[0]: dtype=bf16 is not a dtype of llama3.1-mbridge 70b in release dgxc-2025; "
              "allowed: fp8 (release v26.08 has dtype bf16)",)),
}  # fmt: skip


def plan(config: dict | str, capsys, *args: str) -> tuple[int, str, str]:
    text = config if isinstance(config, str) else yaml.safe_dump(config, sort_keys=False)
    Path("config.yaml").write_text(text)
    return run_cli(["plan", "--config", "config.yaml", *args], capsys)


@pytest.mark.parametrize("case", sorted(REFUSED, key=lambda c: int(c[2:])))
def test_release_config_refused(case: str, sandbox: Path, capsys) -> None:
    config, needles = REFUSED[case]
    code, out, err = plan(config, capsys)
    assert code == 2 and out == ""
    one_error_line(err, *needles, prefix=PREFIX)
    assert_untouched(sandbox)


@pytest.mark.parametrize(("case", "release"), [("PL2", "V26.08"), ("PL8", "v26.08 ")])
def test_release_case_and_spaces_are_normalised(case: str, release: str, sandbox, capsys) -> None:
    code, out, err = plan({"sweeps": [{**MB70, "release": release}]}, capsys, "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert run["run_id"] == "llama3.1-mbridge_70b_fp8_h100x512-v26.08_perf"
    assert run["release"] == "v26.08"


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "the workflow refuses" not in line]


@pytest.mark.parametrize(
    ("case", "variants", "needle"),
    [("PL25", ["profile"], "1 run of release v26.08 with variant profile: the release's "
                           "suite runs without a profiler (profile: false); profiled here "
                           "at Nsight steps 45-50 on ranks all"),
     ("PL26", ["ckpt-save", "ckpt-load"], "2 runs of release v26.08 with variant "
                                          "ckpt-save/ckpt-load: the release publishes no "
                                          "checkpoint runs")],
)  # fmt: skip
def test_a_variant_the_release_does_not_run_says_what_happens(
    case: str, variants: list[str], needle: str, sandbox, capsys
) -> None:
    code, out, err = plan({"sweeps": [{**MB70, "variants": variants}]}, capsys, "--format", "csv")
    assert code == 0 and len(out.splitlines()) == 1 + len(variants)
    (line,) = warnings(err)
    assert line.startswith("llmbench: warning: config.yaml: ") and needle in line


def test_PL28_one_model_in_two_releases_says_what_happens(sandbox, capsys) -> None:
    config = {"sweeps": [{**MB70, "release": "spec", "scales": [64]}, MB70]}
    code, out, err = plan(config, capsys, "--format", "csv")
    runs = [line.split(",")[0] for line in out.splitlines()[1:]]
    assert code == 0 and runs == ["llama3.1-mbridge_70b_fp8_h100x64_perf",
                                  "llama3.1-mbridge_70b_fp8_h100x512-v26.08_perf"]  # fmt: skip
    (line,) = warnings(err)
    assert "llama3.1-mbridge 70b runs in releases dgxc-2025 and v26.08: each run takes its " in line


def exemplar() -> dict:
    return yaml.safe_load((REPO / "configs/exemplar-v26.08.yaml").read_text())


def test_PL31_the_exemplar_with_other_releases_plans_every_run(sandbox, capsys) -> None:
    config = exemplar()
    config["sweeps"] += [TINY, NEMO]
    code, out, _ = plan(config, capsys)
    assert code == 0
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("40 runs, up to 128 nodes: "), summary


def test_PL32_the_exemplar_as_json(sandbox, capsys) -> None:
    code, out, _ = plan(exemplar(), capsys, "--format", "json")
    data = json.loads(out)
    assert code == 0 and set(data) == {"runs", "summary"} and len(data["runs"]) == 38


@pytest.mark.workflow
def test_PL33_the_exemplar_as_config_yaml_is_refused_without_a_site(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text((REPO / "configs/exemplar-v26.08.yaml").read_text())
    proc = snakemake(tmp_path, "-n")
    assert proc.returncode == 1 and "rule train" not in proc.stdout
    (line,) = [line for line in proc.stderr.splitlines() if "error" in line]
    assert line.startswith("llmbench: error: config.yaml: run ") and "launcher local" in line


def test_PL34_an_alias_bomb_is_one_short_line(sandbox, capsys) -> None:
    code, out, err = plan(ALIAS_BOMB, capsys)
    assert code == 2 and out == ""
    one_error_line(err, "more than 1,000,000 values", "alias", prefix=PREFIX)


# --- recipes --release -----------------------------------------------------------------

RECIPES_REFUSED = {
    "RC1": (["--release", "v99.99"], ("release: 'v99.99' is not a release", "allowed: dgxc-2025, "
                                      "v26.08, all")),
    "RC2": (["--release", ""], ("release: '' is not a release; allowed: dgxc-2025, v26.08, all",)),
    "RC6": (["--release", "../../etc/passwd"], ("release: '../../etc/passwd' is not a release",)),
    "RC9": (["--dtype", "NVFP4"], ("dtype=NVFP4 is not a dtype; allowed: bf16, fp8, nvfp4",)),
    "RC12": (["--release", "v26.08", "--workload", "tiny-llama"],
             ("workload=tiny-llama is not a workload; allowed: ",)),
    "RC13": (["--release", "v" * 100_000], ("...[100000 chars] is not a release",)),
    "RC14": (["--release", "v26.08", "--size", "671B"],
             ("size=671B is not a size",)),
    "RC16": (["--release", "all", "--include-superseded", "--gpu-type", "a100"],
             ("gpu_type=a100 is not a gpu_type; allowed: b200, b300, gb200, gb300, h100",)),
}  # fmt: skip
EMPTY = {
    "RC7": (["--release", "v26.08", "--dtype", "nvfp4", "--gpu-type", "h100"],
            "no nvfp4 row has gpu_type h100 in release v26.08; its gpu_types there: b200, "
            "b300, gb200, gb300"),
    "RC11": (["--release", "spec", "--workload", "deepseek-v3-mbridge"],
             "deepseek-v3-mbridge is not in release dgxc-2025 (it has llama2-maxtext, "
             "llama3.1-mbridge, llama3.1-nemo, nemotron4-nemo); it is in: v26.08 "
             "(--release v26.08)"),
    "RC17": (["--release", "v26.08", "--workload", "llama3.1-nemo"],
             "llama3.1-nemo is not in release v26.08 (it has deepseek-v3-mbridge, "
             "llama3.1-mbridge, qwen3-mbridge); it is in: dgxc-2025 (--release dgxc-2025)"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(RECIPES_REFUSED, key=lambda c: int(c[2:])))
def test_recipes_refused(case: str, sandbox: Path, capsys) -> None:
    args, needles = RECIPES_REFUSED[case]
    code, out, err = run_cli(["recipes", *args], capsys)
    assert code == 2 and out == ""
    one_error_line(err, *needles, prefix="llmbench recipes: error: ")


@pytest.mark.parametrize("case", sorted(EMPTY, key=lambda c: int(c[2:])))
def test_recipes_says_why_nothing_matched(case: str, sandbox: Path, capsys) -> None:
    args, why = EMPTY[case]
    code, out, err = run_cli(["recipes", *args], capsys)
    assert code == 0 and out == ""  # no bare header
    assert err == f"llmbench recipes: no rows: {why}\n"
    code, out, err = run_cli(["recipes", *args, "--format", "json"], capsys)
    assert code == 0 and json.loads(out) == [] and "no rows: " in err


def rows(args: list[str], capsys) -> list[dict]:
    code, out, err = run_cli(["recipes", *args, "--format", "json"], capsys)
    assert code == 0 and err == "", err
    return json.loads(out)


@pytest.mark.parametrize(
    ("case", "release", "wanted"),
    [("RC3", "V26.08", "v26.08"), ("RC4", "ALL", "all"), ("RC5", "v26.08 ", "v26.08"),
     ("RC10", "all", "all"), ("RC12", "spec", "dgxc-2025"), ("RC13", " Spec", "dgxc-2025")],
)  # fmt: skip
def test_recipes_release_is_normalised(case, release, wanted, sandbox, capsys) -> None:
    got = rows(["--release", release], capsys)
    assert got == rows(["--release", wanted], capsys) and got
    if wanted == "all":
        assert {r.get("release", "dgxc-2025") for r in got} == {"dgxc-2025", "v26.08"}
    else:
        assert {r["release"] for r in got} == {wanted}


def test_RC8_a_gpu_type_of_the_release(sandbox, capsys) -> None:
    got = rows(["--release", "v26.08", "--gpu-type", "b300"], capsys)
    assert got and {r["gpu_type"] for r in got} == {"b300"}


def test_RC15_a_closed_pipe_is_no_traceback(sandbox) -> None:
    llmbench = Path(sys.executable).with_name("llmbench")
    command = f"{llmbench} recipes --release v26.08 --format csv | head -1"
    proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith("workload,framework,size,dtype,gpu_type,gpus")
    assert "Traceback" not in proc.stderr and proc.stderr == "", proc.stderr
