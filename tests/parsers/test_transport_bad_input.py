"""Hostile NCCL debug files, as the fourth bad-input probe put them into a run's attempt
folder (its cases T1-T18, named here by their ids): each is read the way ``llmbench
explain`` and the aggregate job read a run whose ``transport.json`` is gone
(``read_run_transport``), for a run of 2 nodes.

The probe's standard file is a socket fallback of one process; every case keeps it (or
damages it) and expects it found, nothing hung, memory bounded, nothing unreadable
silent. Where a case damages the network's name, the file holds the name and the node
count only (``NAMED``), so that the name alone must show the sockets. The sizes are
smaller than the probe's (T1: 300 MB, T2: 400 MB, T3: 50 MB; T10 keeps its 10,000
files); benchmarks/transport_reader.py measures the large ones.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pandas as pd
import pytest

from llmbench.aggregate.explain import RunFacts, transport
from llmbench.aggregate.runs_and_steps import transport_columns
from llmbench.job.run_record import read_run_transport

SOCKET = (
    "gpu1:1234:1300 [0] NCCL INFO Using network Socket\n"
    "gpu1:1234:1300 [0] NCCL INFO comm 0x55d0 rank 0 nRanks 16 nNodes 2 localRanks 8 "
    "localRank 0 MNNVL 0\n"
    "gpu1:1234:1300 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/Socket/0\n"
)
NAMED = "".join(SOCKET.splitlines(keepends=True)[:2])
"""The network named and the node count, without the channel line: a case that damages
the name must be read from the name alone."""
RECORD = {"run_id": "r", "attempt": 1, "attempt_dir": "attempt-1", "spec": {"nodes": 2}}
FALLBACK = "inter-node traffic over TCP sockets"


def attempt(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    """A run folder ``runs/r`` whose attempt-1 holds ``files`` (no transport.json)."""
    folder = tmp_path / "runs" / "r" / "attempt-1"
    folder.mkdir(parents=True)
    for name, content in files.items():
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return folder.parent


def read(run_dir: Path) -> tuple[dict, list[str]]:
    """The run's transport data and the titles of its explain items."""
    data = read_run_transport(run_dir, RECORD)
    row = {"run_id": "r", "nodes": 2, "socket_fallback": bool(data.get("socket_inter_node"))}
    items, _ = transport(RunFacts(row, run_dir.parents[1], RECORD, data))
    return data, [i.title for i in items]


def flagged(tmp_path: Path, content: str | bytes, *more: tuple[str, str | bytes]) -> dict:
    data, titles = read(attempt(tmp_path, {"nccl-debug.gpu1.1234.log": content, **dict(more)}))
    assert data["socket_inter_node"] is True and titles[:1] == [FALLBACK], (data, titles)
    return data


def test_T1_one_socket_channel_at_the_end_of_many_ib_channels(tmp_path: Path) -> None:
    ib = "gpu1:1234:1300 [0] NCCL INFO Channel 01/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
    big = SOCKET.splitlines(keepends=True)[1] + ib * 40_000 + SOCKET.splitlines()[2] + "\n"
    data = flagged(tmp_path, big)
    assert data["net_transport"] == "mixed: ib, socket" and data["gdr"] == "mixed"


def test_T2_a_long_line_is_read_in_bounded_memory(tmp_path: Path) -> None:
    run_dir = attempt(tmp_path, {"nccl-debug.gpu1.1234.log": SOCKET})
    (run_dir / "attempt-1" / "nccl-debug.gpu2.9.log").write_bytes(b"x" * (8 << 20))
    tracemalloc.start()
    try:
        data, titles = read(run_dir)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert titles[:1] == [FALLBACK] and len(data["files"]) == 2
    assert peak < 4 << 20, f"{peak:,} bytes for one 8 MiB line"


def test_T3_random_binary_beside_a_socket_file(tmp_path: Path) -> None:
    noise = random.Random(3).randbytes(2 << 20)
    flagged(tmp_path, SOCKET, ("nccl-debug.gpu2.7.log", noise))


def test_T4_a_network_name_cut_by_a_killed_writer(tmp_path: Path) -> None:
    data = flagged(tmp_path, "gpu1:1234:1300 [0] NCCL INFO Using network Sock")
    assert data["net_transport"] == "socket"
    assert "'Sock' (its line is cut) read as Socket" in data["fields"]["net_transport"]["why"]


def test_T4_a_cut_name_that_begins_several_names_is_not_guessed(tmp_path: Path) -> None:
    data, _ = read(attempt(tmp_path, {"nccl-debug.a.1.log": "a:1:2 [0] NCCL INFO Using network I"}))
    assert data["net_transport"] == "i" and not data["socket_inter_node"]


def test_T4b_the_comm_line_cut_while_the_run_spans_two_nodes(tmp_path: Path) -> None:
    cut = SOCKET.splitlines()[0] + "\n" + SOCKET.splitlines()[1][:60]
    flagged(tmp_path, cut)


def test_T5_ansi_colour_around_whole_records(tmp_path: Path) -> None:
    coloured = "".join(f"\x1b[32m{line}\x1b[0m\n" for line in NAMED.splitlines())
    flagged(tmp_path, coloured)


def test_T5b_ansi_bold_inside_the_network_name(tmp_path: Path) -> None:
    flagged(tmp_path, NAMED.replace("network Socket", "network \x1b[1mSocket\x1b[0m"))


def test_T6_ib_named_then_socket_named_and_used(tmp_path: Path) -> None:
    lie = "gpu1:1234:1300 [0] NCCL INFO Using network IB\n" + SOCKET
    assert flagged(tmp_path, lie)["net_transport"] == "socket"  # the channels say it


def test_T6b_ib_for_the_comm_then_a_bare_socket_line(tmp_path: Path) -> None:
    lines = SOCKET.splitlines()
    lie = lines[0].replace("Socket", "IB") + "\n" + lines[1] + "\nUsing network Socket\n"
    assert flagged(tmp_path, lie)["net_transport"] == "mixed: ib, socket"


def test_T6c_socket_named_but_the_channels_went_over_ib(tmp_path: Path) -> None:
    """What carried data (the channels) outranks the name given: IB, with GPUDirect RDMA;
    no fallback (the probe accepted a conservative flag here; the channels settle it)."""
    lie = SOCKET.replace("NET/Socket/0", "NET/IB/0/GDRDMA")
    data, titles = read(attempt(tmp_path, {"nccl-debug.gpu1.1234.log": lie}))
    assert (data["net_transport"], data["gdr"], data["socket_inter_node"]) == ("ib", "on", False)
    assert FALLBACK not in titles


def _in_child(run_dir: Path) -> subprocess.CompletedProcess[str]:
    """read_run_transport in a child process with a time and memory limit, so that a hang
    or an endless read fails the test instead of stopping the suite."""
    code = (
        "import json, resource, sys; from pathlib import Path\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "from llmbench.job.run_record import read_run_transport\n"
        f"print(json.dumps(read_run_transport(Path(sys.argv[1]), {RECORD!r})))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(run_dir)],
        capture_output=True, text=True, timeout=60, env=dict(os.environ), check=False,
    )  # fmt: skip


def test_T7_a_named_pipe_among_the_debug_files_is_skipped_without_opening(tmp_path: Path) -> None:
    run_dir = attempt(tmp_path, {"nccl-debug.gpu1.1234.log": SOCKET})
    os.mkfifo(run_dir / "attempt-1" / "nccl-debug.gpu1.2.log")
    try:
        child = _in_child(run_dir)
    except subprocess.TimeoutExpired:
        pytest.fail("reading the attempt's debug files hangs on a named pipe")
    assert child.returncode == 0, child.stderr
    data = json.loads(child.stdout)
    assert data["socket_inter_node"] and data["files"] == ["attempt-1/nccl-debug.gpu1.1234.log"]
    assert data["skipped"] == [
        {"file": "attempt-1/nccl-debug.gpu1.2.log", "why": "not a regular file but a named pipe"}
    ]


def test_T8_a_link_to_dev_zero_is_refused(tmp_path: Path) -> None:
    run_dir = attempt(tmp_path, {"nccl-debug.gpu1.1234.log": SOCKET})
    (run_dir / "attempt-1" / "nccl-debug.gpu1.2.log").symlink_to("/dev/zero")
    try:
        child = _in_child(run_dir)
    except subprocess.TimeoutExpired:
        pytest.fail("reading /dev/zero as a debug file does not end")
    assert child.returncode == 0, child.stderr[-2000:]
    data = json.loads(child.stdout)
    assert data["socket_inter_node"]
    assert data["skipped"][0]["why"] == "not a regular file but a character device"


def test_T9_a_folder_named_like_a_debug_file(tmp_path: Path) -> None:
    run_dir = attempt(tmp_path, {"nccl-debug.gpu1.1234.log": SOCKET})
    (run_dir / "attempt-1" / "nccl-debug.gpu1.3.log").mkdir()
    data, titles = read(run_dir)
    assert titles[:1] == [FALLBACK]
    assert data["skipped"] == [
        {"file": "attempt-1/nccl-debug.gpu1.3.log", "why": "not a regular file but a folder"}
    ]


def test_T10_ten_thousand_debug_files(tmp_path: Path) -> None:
    files = {
        f"nccl-debug.gpu{n // 8}.{n}.log": (
            f"gpu{n // 8}:{n}:{n} [0] NCCL INFO Using network IB\n"
            f"gpu{n // 8}:{n}:{n} [0] NCCL INFO comm 0x{n:x} rank {n} nRanks 512 nNodes 64 "
            "localRanks 8 localRank 0 MNNVL 0\n"
        )
        for n in range(10_000)
    }
    data, titles = read(attempt(tmp_path, files))
    assert len(data["files"]) == 10_000 and data["net_transport"] == "ib"
    assert data["max_nodes"] == 64 and not data["socket_inter_node"] and not titles


def test_T11_a_nul_byte_inside_the_network_name(tmp_path: Path) -> None:
    flagged(tmp_path, NAMED.replace("Socket\n", "Soc\x00ket\n", 1))


def test_T12_a_utf16_debug_file(tmp_path: Path) -> None:
    flagged(tmp_path, NAMED.encode("utf-16"))


def test_T13_crlf_line_ends(tmp_path: Path) -> None:
    flagged(tmp_path, NAMED.replace("\n", "\r\n").encode())


def test_T14_a_record_after_byte_4096_of_its_line(tmp_path: Path) -> None:
    flagged(tmp_path, "x" * 5000 + " " + NAMED)


def test_T15_two_records_glued_on_one_line(tmp_path: Path) -> None:
    lines = SOCKET.splitlines()
    data = flagged(tmp_path, lines[0] + lines[1] + "\n")
    assert data["net_transport"] == "socket" and data["max_nodes"] == 2


def test_T16_an_absurd_node_count(tmp_path: Path) -> None:
    data = flagged(tmp_path, SOCKET.replace("nNodes 2", "nNodes " + "1" + "0" * 23))
    assert data["max_nodes"] == 10**23 and json.loads(json.dumps(data))["max_nodes"] == 10**23


def test_T17_ib_without_gpudirect_rdma(tmp_path: Path) -> None:
    ib = (
        SOCKET.splitlines()[1]
        + "\ngpu1:1234:1300 [0] NCCL INFO Using network IB\n"
        + "gpu1:1234:1300 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n"
    )
    data, titles = read(attempt(tmp_path, {"nccl-debug.gpu1.1234.log": ib}))
    assert (data["net_transport"], data["gdr"]) == ("ib", "off")
    assert titles == ["no GPUDirect RDMA between nodes"]


def test_T18_the_aggregate_rereads_the_files_when_transport_json_is_gone(tmp_path: Path) -> None:
    """The runs table's transport columns from the attempt's files, on an IB site: the
    fallback is flagged (its verdict is then withheld, tests/workflow)."""
    run_dir = attempt(tmp_path, {"nccl-debug.gpu1.1234.log": SOCKET})
    transport_frame = pd.DataFrame([read_run_transport(run_dir, RECORD)])
    out = pd.DataFrame({"run_id": ["r"]})
    transport_columns(out, transport_frame, "ib")
    assert out.loc[0, "socket_fallback"] and out.loc[0, "net_transport"] == "socket"
    transport_columns(out, transport_frame, "none")
    assert not out.loc[0, "socket_fallback"]
