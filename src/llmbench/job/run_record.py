"""Reading run records (``run.json``) and the training logs they point to."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llmbench.core.run_folder import ATTEMPT_DIR
from llmbench.core.run_folder import TRANSPORT as TRANSPORT_FILE
from llmbench.errors import ParseError
from llmbench.files.regular_file import read_regular, why_unreadable
from llmbench.parsers import ParsedLog, parse_log
from llmbench.parsers.summary import no_data_summary
from llmbench.parsers.transport import FIELDS, TransportReport, debug_files, read_transport
from llmbench.parsers.vocabulary import Reason

"""Beside run.json: what NCCL's debug output of the reported attempt says
(``llmbench.parsers.transport``), written by the train job."""
MAX_RECORD_BYTES = 16 << 20
"""A record, summary or transport report is kilobytes; a larger file is not one."""
"""An attempt's folder, beside run.json (the run schema's ``attempt_dir``)."""
_TRANSPORT_KINDS: dict[str, type] = {
    "attempt": int,
    "schema_version": int,
    "files": list,
    "skipped": list,
    "fields": dict,
    "socket_inter_node": bool,
    "socket_any": bool,
    "inter_node_networks": list,
    "communicators": int,
    "max_nodes": int,
    "evidence": list,
    **dict.fromkeys(FIELDS, str),
}
"""The type of each key a ``transport.json`` of either layout may hold."""


def read_record(path: str | Path) -> Any:
    """A JSON file llmbench wrote (a run record, summary or peak): a regular file of at
    most ``MAX_RECORD_BYTES``; ``OSError`` or ``ValueError`` otherwise."""
    return json.loads(read_regular(path, MAX_RECORD_BYTES))


def summarize_record(record_path: str | Path) -> tuple[dict[str, Any], ParsedLog]:
    """The parsed summary of a record's log, tagged with the run and attempt it describes
    (so a summary left from an earlier attempt is never mistaken for the current one)."""
    record_path = Path(record_path)
    record = read_record(record_path)
    parsed = parse_attempt_log(record_path.parent, record)
    summary = {"run_id": record["run_id"], "attempt": record["attempt"]}
    summary.update(parsed.summary.as_dict())
    return summary, parsed


def parse_attempt_log(run_dir: Path, record: Mapping[str, Any]) -> ParsedLog:
    """Parse the training log of the attempt ``record`` describes, with its run's window
    and number of steps. A log that is gone (deleted during the run) or cannot be read is
    the attempt's outcome, ``no_data`` with ``log_missing`` or ``unreadable``, not an
    error: the record stands and the next invocation redoes the run."""
    spec = record["spec"]
    try:
        return parse_log(
            run_dir / record["log"],
            window=tuple(spec["window"]),
            expected_steps=spec["steps"],
        )
    except ParseError as err:
        missing = isinstance(err.__cause__, FileNotFoundError)
        return ParsedLog(
            no_data_summary(Reason.LOG_MISSING if missing else Reason.UNREADABLE, str(err))
        )


def attempt_transport(run_dir: Path, record: Mapping[str, Any]) -> TransportReport:
    """The transport report of the reported attempt's NCCL debug files, with the run's
    node count (the site's fabric is the aggregate's to apply). Only an ``attempt-<n>``
    folder of the run is read: a record naming another (``../..``) reads none."""
    name = record.get("attempt_dir")
    ok = isinstance(name, str) and ATTEMPT_DIR.fullmatch(name) is not None
    files = debug_files(run_dir / name) if ok else []
    spec = record.get("spec")
    nodes = spec.get("nodes") if isinstance(spec, Mapping) else None
    known = isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 0
    return read_transport(files, nodes=nodes if known else None, base=run_dir)


def transport_problem(data: Any) -> str | None:
    """What is wrong with a ``transport.json``'s shape (a field of another type, an
    evidence entry without its fact, file or line), or None."""
    if not isinstance(data, dict):
        return f"not a JSON object but {type(data).__name__}"
    for key, kind in _TRANSPORT_KINDS.items():
        if key in data and not isinstance(data[key], kind):
            return f"{key}: {str(data[key])[:40]!r} is not {kind.__name__}"
    if not all(isinstance(f, str) for f in data.get("files", [])):
        return "files: not a list of file names"
    for name, answer in data.get("fields", {}).items():
        quotes = answer.get("evidence", []) if isinstance(answer, dict) else None
        if not isinstance(quotes, list | tuple) or not all(isinstance(q, dict) for q in quotes):
            return f"fields.{str(name)[:40]}: not a value with its quoted lines"
    for n, item in enumerate(data.get("evidence", [])):
        fields = {"fact": str, "file": str, "line": int}
        if not isinstance(item, dict) or not all(
            isinstance(item.get(k), t) for k, t in fields.items()
        ):
            return f"evidence[{n}]: not a fact, file and line"
    return None


def run_transport(run_dir: Path, record: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The run's ``transport.json`` (either layout, docs/transport.md) when it describes
    the reported attempt, else the attempt's files read now (runs recorded before the
    train job wrote the file), and why the file was not used ("" when it was, or is
    simply absent)."""
    path = run_dir / TRANSPORT_FILE
    why = ""
    try:
        data = read_record(path)
    except FileNotFoundError:
        data = None
    except OSError as err:
        data, why = None, why_unreadable(err)
    except ValueError as err:
        data, why = None, f"not JSON ({str(err)[:80]})"
    if data is not None:
        why = transport_problem(data) or ""
        if not why and data.get("attempt") == record.get("attempt"):
            return data, ""
        why = why or f"describes attempt {data.get('attempt')!r}, not the reported one"
    return {"attempt": record.get("attempt"), **attempt_transport(run_dir, record).as_dict()}, why


def read_run_transport(run_dir: Path, record: Mapping[str, Any]) -> dict[str, Any]:
    """``run_transport``'s report."""
    return run_transport(run_dir, record)[0]
