"""Rendering launch scripts: readable files that are exactly what a run executes.

"What to run" is a ``RunSpec``; "where/how ranks start" is the launcher. Profiling and
tracing (later variants) are prefixes to the command, never a second copy of it.
"""

from llmbench.launch.script import render_launch_script

__all__ = ["render_launch_script"]
