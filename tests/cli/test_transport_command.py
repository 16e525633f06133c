"""``llmbench transport FILE...`` on corpus files (tests/fixtures/nccl-debug/): the fields
with the quoted lines, JSON for scripts; one line and exit 2 for a missing file, a folder,
a pipe or a bad option; and once as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.cli import main
from llmbench.parsers.transport import FIELDS

CORPUS = Path(__file__).parents[1] / "fixtures" / "nccl-debug"
FALLBACK = CORPUS / "eks-g6e-efa-failed-socket-fallback-4nodes_2.27.3.log"
OLD_IB = CORPUS / "nv-peer-memory-56-a_bootstrap-socket-init-ib_2.4.7.log"


def exit_status(argv: list[str]) -> int:
    """main()'s status, also where argparse exits for a usage error."""
    try:
        return main(argv)
    except SystemExit as stop:
        return int(stop.code or 0)


def test_table_prints_each_field_with_the_lines_that_show_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["transport", str(FALLBACK), "--fabric", "efa"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "1 file(s) read"
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in out[1:] if line[:1] != " "}
    assert list(rows) == list(FIELDS)
    assert rows["socket_fallback"][0] == "yes" and rows["net_transport"][0] == "socket"
    quoted = [line for line in out if line.startswith(" ")]
    lines = FALLBACK.read_text().splitlines()
    for line in quoted:  # "<file>:<n>: <text>" under its field, <text> on line n
        where, text = line.strip().split(": ", 1)
        number = int(where.rsplit(":", 1)[1])
        assert text in lines[number - 1]
    assert any("via NET/Socket/0" in line for line in quoted)


def test_old_nccl_on_ib_is_not_a_socket_fallback(capsys: pytest.CaptureFixture[str]) -> None:
    """NCCL 2.4 prints its bootstrap's socket line in every process: not the network."""
    assert main(["transport", str(OLD_IB), "--fabric", "ib", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["net_transport"], data["socket_fallback"], data["nccl_plugin"]) == (
        "ib",
        "no",
        "internal IB",
    )
    assert data["fields"]["net_transport"]["evidence"][0]["text"].endswith(
        "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.11.1<0>"
    )


def test_nodes_decide_what_the_lines_cannot(capsys: pytest.CaptureFixture[str]) -> None:
    name = str(CORPUS / "aws-ofi-nccl-715_ofi-init-failed-socket-fallback_sagemaker_2.19-2.21.log")
    assert main(["transport", name, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["socket_fallback"] == "unknown"
    assert main(["transport", name, "--nodes", "2", "--fabric", "efa", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["socket_fallback"] == "yes"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["/no/such/file.log"], "FILE: '/no/such/file.log': No such file or directory"),
        ([str(CORPUS)], "not a regular file but a folder"),
        ([str(FALLBACK), "--nodes", "0"], "argument --nodes: '0' is not allowed"),
        ([str(FALLBACK), "--fabric", "roce"], "argument --fabric: invalid choice: 'roce'"),
        ([], "the following arguments are required: FILE"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_status(["transport", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("llmbench transport: error: ") and err.count("\n") == 1
    assert says in err


def test_a_named_pipe_is_refused_without_opening_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipe = tmp_path / "nccl-debug.h.1.log"
    os.mkfifo(pipe)
    assert main(["transport", str(pipe)]) == 2
    assert "not a regular file but a named pipe" in capsys.readouterr().err


def test_as_a_real_process() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "llmbench.cli", "transport", str(FALLBACK), "--format", "json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["fields"]["nccl_version"]["value"] == "2.27.3"
