"""Where a run is launched (train job; Slurm resources on the login node): launch files.

"What to run" is a ``RunSpec``; "where/how ranks start" is the launcher. Profiling and
tracing (later variants) are prefixes to the command, never a second copy of it. The
package imports none of its modules: ``python -m llmbench.launch.kubernetes_watch``
(and ``runai``) run as scripts and must not be loaded before.
"""
