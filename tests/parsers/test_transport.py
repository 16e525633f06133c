"""The transport parser on details of real NCCL output from public sources
(tests/fixtures/nccl-debug/, sources in its README); every field of every file is checked
in test_transport_corpus.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmbench.parsers.transport import network_kind, read_transport

SAMPLES = Path(__file__).parents[1] / "fixtures" / "nccl-debug"


def test_the_4_node_fallback_names_its_lines() -> None:
    name = "eks-g6e-efa-failed-socket-fallback-4nodes_2.27.3.log"
    report = read_transport([SAMPLES / name], base=SAMPLES)
    assert report.max_nodes == 4 and report.communicators == 2  # the comm and its split
    assert report.inter_node_networks == ["socket"]
    facts = {e["fact"]: e for e in report.evidence}
    assert facts["network Socket"]["file"] == name
    line = (SAMPLES / name).read_text().splitlines()[facts["network Socket"]["line"] - 1]
    assert line.endswith("NCCL INFO Using network Socket")
    assert "NET/OFI aws-ofi-nccl initialization failed" in facts["net plugin failed"]["text"]


def test_sockets_between_nodes_where_nccl_prints_no_node_count() -> None:
    """NCCL before 2.20 prints no nNodes: a run that spans nodes says so."""
    for name in (
        "nvidia-nccl-tests-166_no-ibverbs-socket-2nodes_2.18.3.log",
        "nvidia-nccl-1021_ofi-init-failed-socket-fallback_p4de_2.13-2.18.log",
        "aws-ofi-nccl-715_ofi-init-failed-socket-fallback_sagemaker_2.19-2.21.log",
    ):
        assert read_transport([SAMPLES / name], inter_node=True).socket_inter_node, name
    ib = "nvidia-nccl-tests-350_ib-roce-gdr-on_2.16.5.log"
    assert not read_transport([SAMPLES / ib], inter_node=True).socket_inter_node


def test_one_file_per_process_and_glued_records(tmp_path: Path) -> None:
    """Two records on one physical line (aws-ofi-nccl#990) are two records; a file per
    process joins into one report, one rank's socket is enough to show it (#715)."""
    glued = read_transport([SAMPLES / "aws-ofi-nccl-990_ofi-plugin-loaded_2.27.3.log"])
    assert glued.nccl_plugin == "Libfabric (v10)" and glued.nccl_version == "2.27.3"
    lines = (SAMPLES / "nvidia-nccl-1537_roce-gdr-disabled_2.19-2.21.log").read_text()
    (tmp_path / "nccl-debug.a.1.log").write_text(lines)
    (tmp_path / "nccl-debug.b.2.log").write_text(
        "b:2:3 [0] NCCL INFO Using network Socket\n"
        "b:2:3 [0] NCCL INFO comm 0x1 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
    )
    both = read_transport(sorted(tmp_path.iterdir()), base=tmp_path)
    assert both.net_transport == "socket"  # only the socket comm shows that it spans nodes
    assert both.socket_inter_node and both.files == ["nccl-debug.a.1.log", "nccl-debug.b.2.log"]
    assert read_transport([]).net_transport == "" and read_transport([]).files == []


@pytest.mark.parametrize(
    ("name", "kind"),
    [("IB", "ib"), ("IBext_v8", "ib"), ("AWS Libfabric", "ofi"), ("Libfabric", "ofi"),
     ("Socket", "socket"), ("Custom", "custom")],
)  # fmt: skip
def test_network_names(name: str, kind: str) -> None:
    assert network_kind(name) == kind
