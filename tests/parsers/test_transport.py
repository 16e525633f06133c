"""The transport parser on details of real NCCL output from public sources
(tests/fixtures/nccl-debug/, sources in its README): the quoted lines, how files and
processes join, glued records, the transport.json layout. Every field of every file is
checked in test_transport_corpus.py; hostile files in test_transport_bad_input.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmbench.parsers.transport import SCHEMA_VERSION, network_kind, read_transport

SAMPLES = Path(__file__).parents[1] / "fixtures" / "nccl-debug"


def test_the_4_node_fallback_quotes_its_lines() -> None:
    name = "eks-g6e-efa-failed-socket-fallback-4nodes_2.27.3.log"
    report = read_transport([SAMPLES / name], fabric="efa", base=SAMPLES)
    assert report.max_nodes == 4 and report.communicators == 2  # the comm and its split
    assert report.socket_inter_node
    lines = (SAMPLES / name).read_text().splitlines()
    fallback = report.fields["socket_fallback"]
    assert fallback.value == "yes" and "efa" in fallback.why
    quoted = {lines[q.line - 1] for q in fallback.evidence}
    assert any(line.endswith("via NET/Socket/0") for line in quoted)
    assert any("nNodes 4" in line for line in quoted)
    (failed,) = report.fields["nccl_plugin"].evidence
    assert "NET/OFI aws-ofi-nccl initialization failed" in failed.text


def test_sockets_between_nodes_when_the_caller_gives_the_node_count() -> None:
    """NCCL before 2.20 prints no nNodes: the run's node count says it spans nodes."""
    for name in (
        "nvidia-nccl-1021_ofi-init-failed-socket-fallback_p4de_2.13-2.18.log",
        "aws-ofi-nccl-715_ofi-init-failed-socket-fallback_sagemaker_2.19-2.21.log",
    ):
        assert not read_transport([SAMPLES / name]).socket_inter_node, name
        report = read_transport([SAMPLES / name], nodes=2, fabric="efa")
        assert report.socket_inter_node and report.fields["socket_fallback"].value == "yes"
        assert read_transport([SAMPLES / name], nodes=1).fields["socket_fallback"].value == "no"
    ib = "nvidia-nccl-tests-350_ib-roce-gdr-on_2.16.5.log"
    assert not read_transport([SAMPLES / ib], nodes=2, fabric="ib").socket_inter_node


def test_one_file_per_process_and_glued_records(tmp_path: Path) -> None:
    """Two records on one physical line (aws-ofi-nccl#990) are two records; a file per
    process joins into one report, where one process's sockets between nodes show."""
    glued = read_transport([SAMPLES / "aws-ofi-nccl-990_ofi-plugin-loaded_2.27.3.log"])
    assert glued.fields["nccl_plugin"].value == "loaded: Libfabric"
    (version,) = glued.fields["nccl_version"].evidence
    assert version.text.startswith("h100-st-p548xlarge-316:1747401:1747401 [1] NCCL INFO NCCL")
    lines = (SAMPLES / "nvidia-nccl-1537_roce-gdr-disabled_2.19-2.21.log").read_text()
    (tmp_path / "nccl-debug.a.1.log").write_text(lines)
    (tmp_path / "nccl-debug.b.2.log").write_text(
        "b:2:3 [0] NCCL INFO Using network Socket\n"
        "b:2:3 [0] NCCL INFO comm 0x1 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
    )
    both = read_transport(sorted(tmp_path.iterdir()), base=tmp_path)
    assert both.fields["net_transport"].value == "mixed: ib, socket"
    assert both.socket_inter_node and both.files == ["nccl-debug.a.1.log", "nccl-debug.b.2.log"]


def test_a_bootstrap_line_is_never_the_data_network(tmp_path: Path) -> None:
    """NCCL 2.4.7 starts its socket transport in every process for the bootstrap; 2.5+
    prints the bootstrap apart, and then a socket transport that started is the network."""
    old = "h:1:2 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.1<0>\nNCCL version 2.4.7+cuda10\n"
    (tmp_path / "old.log").write_text(old)
    assert read_transport([tmp_path / "old.log"]).fields["net_transport"].value == "unknown"
    new = "h:1:2 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n" + old.replace("4.7", "5.6")
    (tmp_path / "new.log").write_text(new)
    assert read_transport([tmp_path / "new.log"]).fields["net_transport"].value == "socket"
    (tmp_path / "boot.log").write_text("h:1:2 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n")
    assert read_transport([tmp_path / "boot.log"]).fields["net_transport"].value == "unknown"


def test_transport_json_keeps_the_first_layouts_values_beside_the_fields() -> None:
    name = "nvidia-nccl-tests-350_ib-roce-gdr-on_2.16.5.log"
    data = json.loads(json.dumps(read_transport([SAMPLES / name], base=SAMPLES).as_dict()))
    assert data["schema_version"] == SCHEMA_VERSION == 2
    assert (data["net_transport"], data["gdr"], data["nccl_plugin"]) == ("ib", "on", "internal IB")
    assert data["fields"]["gdr"]["value"] == "on" and data["fields"]["gdr"]["why"]
    assert data["inter_node_networks"] == ["ib"] and data["socket_inter_node"] is False
    assert {e["fact"] for e in data["evidence"]} >= {"net_transport", "gdr", "nccl_version"}
    nothing = read_transport([]).as_dict()  # a CPU run: no NCCL output at all
    assert nothing["net_transport"] == "" and nothing["files"] == []
    assert nothing["fields"]["net_transport"]["value"] == "unknown"


@pytest.mark.parametrize(
    ("name", "kind"),
    [("IB", "ib"), ("IBext_v8", "ib"), ("AWS Libfabric", "ofi"), ("Libfabric", "ofi"),
     ("Socket", "socket"), ("gIB", "gib"), ("GPUDirectTCPX_v7", "tcpx"), ("FasTrak", "tcpxo"),
     ("Custom", "custom")],
)  # fmt: skip
def test_network_names(name: str, kind: str) -> None:
    assert network_kind(name) == kind
