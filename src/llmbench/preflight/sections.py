"""A GPU node's check outputs as ``preflight.log`` holds them: each tool's output under
its section line, then one line saying how the tool ended
(``### llmbench preflight end: <name> <ending>: <phrase>``; the ending is a word of
``llmbench.files.tool_output.ToolRun.ending``).

The workflow's ``preflight_node`` job and the GPU proof kit's node step both run their
tools through ``run_section`` and judge the log with ``llmbench.preflight.node.gpu_result``,
so a tool that hangs, prints garbage or prints without end is read, stopped and named the
same way in both.
"""

from __future__ import annotations

from collections.abc import Sequence

from llmbench.files.tool_output import MAX_OUTPUT_BYTES, ToolRun, run_tool

SECTION = "### llmbench preflight: "
END = "### llmbench preflight end: "


def section(name: str, run: ToolRun) -> str:
    """``run``'s output under the section line of ``name``, and how it ended."""
    body = run.text if not run.text or run.text.endswith("\n") else run.text + "\n"
    return f"{SECTION}{name}\n{body}{END}{name} {run.ending}: {run.problem or 'exit 0'}\n"


def run_section(
    name: str, argv: Sequence[str], timeout_s: float, max_bytes: int = MAX_OUTPUT_BYTES
) -> str:
    """Run one check's tool (``run_tool``: bounded output, its own time limit) and
    return its ``section``."""
    return section(name, run_tool(argv, timeout_s, max_bytes))


def sections(text: str) -> dict[str, str]:
    """Each section's output, by name (the ending lines left out)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith(SECTION):
            current = line[len(SECTION) :].strip()
            out[current] = []
        elif line.startswith(END):
            current = None
        elif current is not None:
            out[current].append(line)
    return {name: "\n".join(lines) for name, lines in out.items()}


def endings(text: str) -> dict[str, tuple[str, str]]:
    """How each section's tool ended: name -> (ending, phrase); sections written without
    an ending line (an older log) are left out."""
    out = {}
    for line in text.splitlines():
        if line.startswith(END):
            name, _, rest = line[len(END) :].partition(" ")
            ending, _, phrase = rest.partition(": ")
            out[name] = (ending, phrase)
    return out
