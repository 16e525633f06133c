"""The report in real headless Chromium: it loads without JavaScript errors, shows its
sections and plots, its first page reads as English ("sweep of 1 sweep entry", not
"entr(y/ies)"), and it leaves a screenshot in the results folder."""

from __future__ import annotations

import shutil
import subprocess
import tempfile

import pytest

from tests.helpers import Sweep, snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.chromium]
CHROMIUM = shutil.which("chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--virtual-time-budget=15000",
    "--enable-logging=stderr",
    "--v=0",
]


@pytest.mark.prerequisite(CHROMIUM is not None, "Debian's chromium is not installed")
def test_report_loads_and_renders(finished_sweep: Sweep) -> None:
    report = finished_sweep.results / "report.html"
    if not report.exists():
        proc = snakemake(finished_sweep.workdir, "--report", str(report))
        assert proc.returncode == 0, proc.stderr[-3000:]
    url = report.resolve().as_uri()
    shot = finished_sweep.results / "report-screenshot.png"
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
            capture_output=True,
            text=True,
            timeout=180,
        )
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                "--window-size=1400,1000",
                f"--screenshot={shot}",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert dom.returncode == 0, dom.stderr[-3000:]
    page_errors = [
        line
        for line in dom.stderr.splitlines()
        if "Uncaught" in line or ("CONSOLE" in line and "error" in line.lower())
    ]
    assert not page_errors, page_errors
    for section in ("Overview", "Scaling", "Runs", "References", "Failures", "Profiles"):
        assert section in dom.stdout, section
    assert "<svg" in dom.stdout or "<img" in dom.stdout  # at least one figure drawn
    entries = len(finished_sweep.config["sweeps"])
    noun = "entry" if entries == 1 else "entries"
    assert f"llmbench sweep of {entries} sweep {noun}:" in dom.stdout
    assert "entr(y/ies)" not in dom.stdout
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
