"""Config validation: every bad value is one line naming the key, value and what is allowed."""

import pytest

from llmbench.core.config import load_config, run_specs, validate_config
from llmbench.errors import ConfigError
from tests.helpers import HERE, tiny_sweep

TINY = tiny_sweep((1, 2), dtypes=("fp32", "bf16"))


def config(**top):
    return {"sweeps": [dict(TINY)], **top}


def with_sweep(**changes):
    return {"sweeps": [{**TINY, **changes}]}


def error_of(raw) -> str:
    with pytest.raises(ConfigError) as info:
        validate_config(raw, "config.yaml")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("config.yaml: ")
    return message


def test_defaults_are_filled() -> None:
    cfg = validate_config(config())
    assert cfg["steps"] == 50 and cfg["window"] == [35, 44]
    assert cfg["sweeps"][0]["variants"] == ["perf"]
    assert cfg["sweeps"][0]["scaling"] == "weak"
    assert cfg["launcher"] == "local" and cfg["container"] == "none"


def test_expansion_gives_stable_readable_ids() -> None:
    ids = [s.run_id for s in run_specs(validate_config(config()))]
    assert ids == [
        "tiny-llama_tiny_fp32_cpux1_perf",
        "tiny-llama_tiny_fp32_cpux2_perf",
        "tiny-llama_tiny_bf16_cpux1_perf",
        "tiny-llama_tiny_bf16_cpux2_perf",
    ]


def test_weak_scaling_batch_of_the_tiny_workload() -> None:
    specs = run_specs(validate_config(config()))
    for spec in specs:
        par = spec.parallelism
        assert spec.global_batch_size == spec.micro_batch_size * par["dp"] * par["ga"]
        assert par["dp"] == spec.gpus


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (with_sweep(dtypes=["fp16"]), "sweeps[0].dtypes[0]: 'fp16' is not allowed; allowed:"),
        (with_sweep(workload="gpt"), "sweeps[0].workload: 'gpt' is not allowed; allowed:"),
        (with_sweep(scales=[0]), "sweeps[0].scales[0]: 0 is less than the minimum of 1"),
        (with_sweep(scales=[-2]), "sweeps[0].scales[0]: -2 is less than the minimum of 1"),
        (with_sweep(sizes=["huge"]), "sweeps[0].sizes: 'huge' is not allowed for this workload"),
        (with_sweep(dtypes=["fp8"]), "sweeps[0].dtypes: 'fp8' is not allowed for this workload"),
        (config(steps=44), "steps: 44 must be at least 45"),
        (config(window=[44, 35]), "window: [44, 35] must be [first, last]"),
        (config(colour="red"), "'colour' was unexpected"),
        ({"sweeps": []}, "sweeps: [] should be non-empty"),
        ({}, "'sweeps' is a required property"),
        (with_sweep(variants=["perf", "perf"]), "has non-unique elements"),
    ],
)
def test_bad_values_name_key_value_and_rule(raw, expected) -> None:
    assert expected in error_of(raw)


def test_duplicate_runs_across_entries_are_refused() -> None:
    message = error_of({"sweeps": [dict(TINY), dict(TINY)]})
    assert "run tiny-llama_tiny_fp32_cpux1_perf is already in sweeps[0]" in message


def test_a_sweep_time_limit_replaces_the_top_level_one_for_its_runs() -> None:
    raw = {
        "sweeps": [{**TINY, "dtypes": ["fp32"]}, {**TINY, "dtypes": ["bf16"], "runtime_min": 2}],
        "runtime_min": 7,
    }
    limits = {s.run_id: s.limits.time_limit_s for s in run_specs(validate_config(raw))}
    assert limits == {
        "tiny-llama_tiny_fp32_cpux1_perf": 7 * 60,
        "tiny-llama_tiny_fp32_cpux2_perf": 7 * 60,
        "tiny-llama_tiny_bf16_cpux1_perf": 2 * 60,
        "tiny-llama_tiny_bf16_cpux2_perf": 2 * 60,
    }
    assert "sweeps[0].runtime_min" in error_of(with_sweep(runtime_min=0))


def test_catalog_workload_resolves_its_row() -> None:
    cfg = validate_config(
        {
            "sweeps": [
                {
                    "workload": "llama3.1-nemo",
                    "sizes": ["70b"],
                    "dtypes": ["fp8"],
                    "gpu_type": "h100",
                    "scales": [64],
                }
            ]
        }
    )
    (spec,) = run_specs(cfg)
    assert spec.run_id == "llama3.1-nemo_70b_fp8_h100x64_perf"
    assert (spec.nodes, spec.gpus_per_node, spec.global_batch_size) == (8, 8, 128)
    par = spec.parallelism
    assert (par["tp"], par["pp"], par["cp"], par["vp"], par["dp"]) == (4, 8, 1, 5, 2)


def test_catalog_scale_that_does_not_exist_is_refused() -> None:
    message = error_of(
        {
            "sweeps": [
                {
                    "workload": "llama3.1-nemo",
                    "sizes": ["8b"],
                    "dtypes": ["bf16"],
                    "gpu_type": "h100",
                    "scales": [48],
                }
            ]
        }
    )
    assert "gpus=48" in message and "allowed: 8, 16, 32, 64, 128" in message


def test_unreadable_yaml_is_one_line(tmp_path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("sweeps: [\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, host=HERE)
    assert "line 2, column 1: invalid YAML" in str(info.value) and "\n" not in str(info.value)


def test_scientific_notation_needs_a_sign_in_yaml(tmp_path) -> None:
    # YAML 1.1 reads 1.0e12 as a string; the error says so instead of failing later.
    path = tmp_path / "config.yaml"
    path.write_text(
        "sweeps: [{workload: tiny-llama, sizes: [tiny], dtypes: [fp32], "
        "gpu_type: cpu, scales: [1]}]\ntotal_tokens: 1.0e12\n"
    )
    with pytest.raises(ConfigError, match=r"total_tokens: '1\.0e12' is not of type 'number'"):
        load_config(path, host=HERE)


NEMO_8B = {
    "workload": "llama3.1-nemo",
    "sizes": ["8b"],
    "dtypes": ["bf16"],
    "gpu_type": "h100",
    "scales": [8],
}


def test_enroot_runs_the_reference_image_unless_the_config_names_another() -> None:
    (spec,) = run_specs(validate_config({"sweeps": [NEMO_8B], "container": "enroot"}))
    assert spec.image == "nvcr.io/nvidia/nemo:25.02.01"  # llama3.1/setup.sh@v25.04.02 L34
    message = error_of({"sweeps": [NEMO_8B], "container": "enroot", "images": {
        "llama3.1-nemo": "nemo:latest tag"}})  # fmt: skip
    assert "images.llama3.1-nemo" in message and "namespace/name:tag" in message
    cfg = validate_config(
        {
            "sweeps": [NEMO_8B],
            "container": "enroot",
            "images": {"llama3.1-nemo": "nvidia/nemo:25.07"},
        }
    )
    assert run_specs(cfg)[0].image == "nvidia/nemo:25.07"
    # Without a container no image is needed.
    assert run_specs(validate_config({"sweeps": [NEMO_8B]}))[0].container == "none"


def test_setup_defaults_and_bad_values() -> None:
    assert validate_config(config())["setup"] == {
        "run_on": "local",
        "partition": None,
        "venv_requirements": "envs/training-venv.txt",
    }
    assert "setup.run_on" in error_of(config(setup={"run_on": "cloud"}))
    assert "setup.partition" in error_of(config(setup={"partition": "cpu; rm -rf /"}))


def test_the_embedded_workload_never_runs_in_a_container() -> None:
    specs = run_specs(validate_config(config(container="enroot")))
    assert {spec.container for spec in specs} == {"none"}
