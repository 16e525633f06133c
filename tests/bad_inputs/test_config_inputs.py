"""Every bad config through `llmbench plan` and through the workflow's own validation
entry (what workflow/rules/common.smk calls), which must agree case by case; a handful
also through a real `snakemake --dry-run`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from llmbench.core.config import merge_config, workflow_config
from llmbench.errors import ConfigError
from tests.bad_inputs.cases import ACCEPTED, ALL, REJECTED, ConfigCase, dump
from tests.bad_inputs.checks import assert_untouched, one_error_line, run_cli
from tests.helpers import HERE, REPO, snakemake


def plan_file(case: ConfigCase, folder: Path) -> Path:
    """The file `plan` reads: the case's, with the workflow's --config values merged in."""
    path = case.write(folder)
    if case.overrides:
        path.write_bytes(dump(merge_config(yaml.safe_load(path.read_bytes()), case.overrides)))
    return path


def workflow_verdict(case: ConfigCase, folder: Path) -> str | None:
    """None when the workflow's entry accepts the case, else its error line."""
    path = case.write(folder)
    try:
        workflow_config(case.overrides, path.name, [Path.cwd(), REPO], host=HERE)
    except ConfigError as err:
        return str(err)
    return None


@pytest.mark.parametrize("case", REJECTED, ids=lambda c: c.id)
def test_plan_refuses_with_one_line(case: ConfigCase, sandbox: Path, capsys) -> None:
    path = plan_file(case, sandbox)
    code, out, err = run_cli(["plan", "--config", path.name], capsys)
    assert code == 2 and out == ""
    one_error_line(err, *case.needles, prefix="llmbench plan: error: ")
    assert_untouched(sandbox)


@pytest.mark.parametrize("case", ALL, ids=lambda c: c.id)
def test_plan_and_workflow_agree(case: ConfigCase, sandbox: Path, capsys) -> None:
    """Same verdict, same message: one validator."""
    workflow = workflow_verdict(case, sandbox)
    for leftover in sandbox.iterdir():  # a fresh folder for plan's copy of the case
        leftover.unlink() if not leftover.is_dir() else leftover.rmdir()
    code, _, err = run_cli(["plan", "--config", plan_file(case, sandbox).name], capsys)
    if case.accepted:
        assert workflow is None and code == 0, (workflow, err)
    else:
        assert workflow is not None and code == 2
        one_error_line(workflow, *case.needles, prefix="")
        assert err.strip() == f"llmbench plan: error: {workflow}"
    assert_untouched(sandbox)


DRY_RUN_CASES = ["binary", "duplicate-top", "steps-float", "ckpt-load-alone", "override-nan"]


def _dry_run_cases() -> list[ConfigCase]:
    by_id = {c.id: c for c in ALL}
    by_id["steps-float"] = by_id["steps-float"]
    return [by_id[i] for i in DRY_RUN_CASES] + [ACCEPTED[0]]


@pytest.mark.workflow
@pytest.mark.parametrize("case", _dry_run_cases(), ids=lambda c: c.id)
def test_real_dry_run(case: ConfigCase, sandbox: Path) -> None:
    """The real `snakemake -n`: the Snakefile reads config.yaml through llmbench, so a bad
    file is one `llmbench: error:` line, never Snakemake's own stack."""
    case.write(sandbox)
    extra = [f"{k}={v}" for k, v in case.overrides.items()]
    proc = snakemake(sandbox, "-n", "--cores", "1", *(["--config", *extra] if extra else []))
    if case.accepted:
        assert proc.returncode == 0, proc.stderr[-3000:]
    else:
        assert proc.returncode == 1
        ours = [line for line in proc.stderr.splitlines() if line.startswith("llmbench")]
        assert len(ours) == 1, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr and "WorkflowError" not in proc.stderr
        one_error_line(ours[0], *case.needles, prefix="llmbench: error: ")
    assert_untouched(sandbox)
