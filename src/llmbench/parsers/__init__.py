"""Wherever a log is read (train job, llmbench parse): logs -> summaries and steps.

Interface (kept stable for the workflow and the CLI):
- ``parse_log(path, window=(35, 44), expected_steps=None, *, framework=None, nccl=False,
  peak_tflops=None) -> ParsedLog``; ``window`` may also be ``"35-44"``, ``"last:10"`` or a
  ``Window`` (``as_window`` checks one)
- ``llmbench.parsers.table.steps_table(parsed)``: one row per unique iteration, columns
  ``STEP_COLUMNS``: ``iteration`` (int64, as the framework numbers it) then float64
  values, NaN when not logged (``step_time_s``, ``loss``, ``tflops_per_gpu``, memory, grad
  norm ...). Imported from its module, not from here: this package loads no pandas.
- ``ParsedLog.summary``: a ``LogSummary``; statuses and reasons are ``Status``/``Reason``.

Formats, numbering and status rules: docs/log-formats.md.
"""

from llmbench.parsers.logfile import ParsedLog, parse_log, read_facts
from llmbench.parsers.nccl import CollectiveSummary, summarize_nccl_trace
from llmbench.parsers.steps import STEP_COLUMNS
from llmbench.parsers.summary import LogSummary
from llmbench.parsers.vocabulary import ITERATION_BASE, Framework, Reason, Status
from llmbench.parsers.window import WINDOW_SYNTAX, Window, as_window

__all__ = [
    "ITERATION_BASE",
    "STEP_COLUMNS",
    "WINDOW_SYNTAX",
    "CollectiveSummary",
    "Framework",
    "LogSummary",
    "ParsedLog",
    "Reason",
    "Status",
    "Window",
    "as_window",
    "parse_log",
    "read_facts",
    "summarize_nccl_trace",
]
