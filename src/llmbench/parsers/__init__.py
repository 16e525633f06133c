"""Training-log parsers for NeMo 2, Megatron(-Bridge) and MaxText.

Interface (kept stable for the workflow and the CLI):
- ``parse_log(path, window=(35, 44), expected_steps=None, *, framework=None, nccl=False)
  -> ParsedLog``
- ``ParsedLog.steps``: one row per unique iteration, columns ``STEP_COLUMNS``:
  ``iteration`` (int64, as the framework numbers it) then float64 values, NaN when not
  logged (``step_time_s``, ``loss``, ``tflops_per_gpu``, memory, grad norm ...).
- ``ParsedLog.summary``: a ``LogSummary``; statuses and reasons are ``Status``/``Reason``.

Formats, numbering and status rules: docs/log-formats.md.
"""

from llmbench.parsers.core import ParsedLog, parse_log, read_facts
from llmbench.parsers.nccl import CollectiveSummary, summarize_nccl_trace
from llmbench.parsers.steps import STEP_COLUMNS
from llmbench.parsers.summary import LogSummary
from llmbench.parsers.vocabulary import ITERATION_BASE, Framework, Reason, Status

__all__ = [
    "ITERATION_BASE",
    "STEP_COLUMNS",
    "CollectiveSummary",
    "Framework",
    "LogSummary",
    "ParsedLog",
    "Reason",
    "Status",
    "parse_log",
    "read_facts",
    "summarize_nccl_trace",
]
