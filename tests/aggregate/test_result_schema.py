"""The result file's and the run record's JSON Schemas (``src/llmbench/core/schemas/``,
docs/results.md), the one folder of schemas: each version pinned to what the schema
accepts (its text without titles and descriptions), so that a change of the format without
a new version fails here, and prose may change freely; what llmbench writes carries the
version; the checks of tests/result_files.py find a bad
file and do not pass on a folder where the workflow left nothing."""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from pathlib import Path

import jsonschema
import pytest

from llmbench.aggregate.result_file import SCHEMAS, schema, schema_version, validate
from llmbench.errors import ConfigError
from llmbench.job.attempts import salvage_record
from llmbench.job.runner import RECORD_SCHEMA_VERSION
from tests.helpers import REPO
from tests.launch.cases import embedded_spec
from tests.result_files import check_files, check_session_files, produced

PINNED = {
    "result": ("1.1.0", "a12d69858ce0edd8a41cf22b2741a8d9bc0313736c59098ff8547cc4b30be47f"),
    "run": ("1.0.0", "321597b4ca5d53a9dbc45f6f0dad861db1028c13671a26ea80754c8db3aa32c4"),
}
"""Schema -> (x-version, sha256 of its contract). A change of what it accepts gets a new
x-version (and the documents' schema_version const, and llmbench's writers) and its hash
here."""

PROSE = ("title", "description")


def contract(node: object, names: bool = False) -> object:
    """The schema without its prose: what a change of version is about. ``names``: a
    ``properties`` mapping, whose keys are field names (a field may be called title)."""
    if isinstance(node, dict):
        return {
            key: contract(value, names=key == "properties" and not names)
            for key, value in node.items()
            if names or key not in PROSE
        }
    if isinstance(node, list):
        return [contract(value) for value in node]
    return node


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_a_schema_change_bumps_its_version(name: str) -> None:
    path = REPO / "src/llmbench/core/schemas" / SCHEMAS[name]
    text = json.dumps(contract(json.loads(path.read_bytes())), sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()
    version, pinned = PINNED[name]
    assert schema_version(name) == version, f"{name}: pin the new version {schema_version(name)}"
    assert digest == pinned, (
        f"{path.name} changed: give it a new x-version and schema_version const, then pin "
        f"({schema_version(name)!r}, {digest!r}) here"
    )
    assert schema(name)["properties"]["schema_version"]["const"] == version
    jsonschema.Draft202012Validator.check_schema(schema(name))


def test_the_schemas_are_in_one_folder() -> None:
    """A reader finds every schema in the package's folder, and nowhere else (no links)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    found = [p for p in listed.split("\0") if "schemas" in Path(p).parts[:-1]]
    assert found and {str(Path(p).parent) for p in found} == {"src/llmbench/core/schemas"}


def test_llmbench_writes_the_record_schema_version(tmp_path: Path) -> None:
    assert schema_version("run") == RECORD_SCHEMA_VERSION
    spec = embedded_spec("local")
    (tmp_path / "attempt-1").mkdir()
    record = salvage_record(tmp_path, spec.to_dict(), "TIMEOUT", "time_limit")
    assert record is not None and record["schema_version"] == RECORD_SCHEMA_VERSION
    validate(record, "run")  # a salvaged (killed) attempt's record fits too


def test_a_bad_file_is_named_with_its_field() -> None:
    # outside the session's temporary folders, which the session-end check reads
    with tempfile.TemporaryDirectory() as folder:
        _check_a_bad_file(Path(folder))


def _check_a_bad_file(tmp_path: Path) -> None:
    record = tmp_path / "results/runs/r/run.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"schema_version": "1.0.0", "run_id": "r", "attempt": 0}))
    made_up = tmp_path / "results/runs/q/run.json"  # a test's own input: not llmbench's
    made_up.parent.mkdir(parents=True)
    made_up.write_text(json.dumps({"run_id": "q"}))
    results, records = produced(tmp_path)
    problems, checked = check_files(results, records)
    assert checked == 1 and len(problems) == 1
    assert str(record) in problems[0] and "required property" in problems[0]
    with pytest.raises(ConfigError, match="attempt: 0 is less than the minimum of 1"):
        validate({**json.loads(record.read_text()), "attempt_dir": "attempt-1", "log": "l",
                  "launch_script": "s", "started_at": "t", "finished_at": "t", "exit_code": 0,
                  "spec": {"workload": "w", "framework": "f", "gpu_type": "cpu", "gpus": 1,
                           "nodes": 1, "window": [0, 1]}, "provenance": {}}, "run")  # fmt: skip


def test_a_sweep_that_left_nothing_fails_the_check(tmp_path: Path) -> None:
    assert check_session_files(tmp_path, []) == []
    assert check_session_files(tmp_path, [tmp_path]) == [
        f"{tmp_path}: the shared sweep left no result.json or run record"
    ]
