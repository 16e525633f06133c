"""The Kubernetes name rules (llmbench.core.kubernetes_names) at their edges, and every name and
label llmbench itself writes into a manifest, for every run of the catalog, within them."""

from __future__ import annotations

import pytest

from llmbench.core import kubernetes_names as k8s
from llmbench.core.catalog import load_catalog
from llmbench.core.config import check_config
from llmbench.core.platform_site import KubernetesSite
from llmbench.launch.kubernetes import render_manifest
from tests.helpers import HERE

SUBDOMAIN_253 = ".".join(["a" * 63] * 3 + ["b" * 61])


EDGES = {
    k8s.is_dns1123_label: (
        ["a" * 63, "llm-bench-2"],
        ["a" * 64, "-a", "a-", "Bad", "a.b", "ns\n", ""],
    ),
    k8s.is_dns1123_subdomain: (
        [SUBDOMAIN_253, "torch-distributed"],
        [SUBDOMAIN_253 + "b", "a..b", "a.-b"],
    ),
    k8s.is_label_value: (
        ["", "NVIDIA-H100-80GB-HBM3", "v1.2_x", "x" * 63],
        ["x" * 64, "_x", "a b", "a/b"],
    ),
    k8s.is_label_key: (
        ["zone", "nvidia.com/gpu.product", "kubernetes.io/hostname", SUBDOMAIN_253 + "/x"],
        ["Example.com/x", "/x", "a/b/c", "a/" + "x" * 64, SUBDOMAIN_253 + "b/x", "bad key!"],
    ),
    k8s.is_queue_label: (["h100-queue"], ["Queue_A", "q" * 64]),
    k8s.is_extended_resource_name: (
        ["nvidia.com/gpu", "amd.com/gpu", "nvidia.com/mig-1g.10gb"],
        ["gpu", "cpu", "kubernetes.io/gpu", "x.kubernetes.io/gpu", "nvidia.com/gpu; rm -rf /"],
    ),
}
"""Per rule: values the API server accepts, and values it refuses."""


@pytest.mark.parametrize("check", list(EDGES), ids=lambda check: check.__name__)
def test_rules_at_their_edges(check) -> None:
    good, bad = EDGES[check]
    assert [v for v in good if not check(v)] == []
    assert [v for v in bad if check(v)] == []


def catalog_sweeps() -> list[dict]:
    """Every (workload, size, dtype, GPU type) of the catalog at all its scales."""
    catalog = load_catalog()
    keys = sorted({(r.workload, r.size, r.dtype, r.gpu_type, r.scaling) for r in catalog.rows()})
    return [
        {
            "workload": w,
            "sizes": [s],
            "dtypes": [d],
            "gpu_type": g,
            "scaling": sc,
            "scales": catalog.scales(w, s, d, g, sc),
        }
        for w, s, d, g, sc in keys
    ]


def test_every_name_and_label_llmbench_writes_is_one_kubernetes_accepts() -> None:
    config = {
        "sweeps": catalog_sweeps(),
        "launcher": "kubernetes",
        "kubernetes": {"queue": "h100-queue"},
    }
    specs = check_config(config, "config.yaml", host=HERE)[1]
    assert len(specs) > 50
    site = KubernetesSite.from_config(config["kubernetes"])
    for spec in specs:
        for attempt in (1, 99):
            manifest = render_manifest(spec, site, attempt)
            meta = manifest["metadata"]
            assert k8s.is_dns1123_label(meta["name"]), meta["name"]
            for key, value in meta["labels"].items():
                assert k8s.is_label_key(key) and k8s.is_label_value(value), (key, value)
