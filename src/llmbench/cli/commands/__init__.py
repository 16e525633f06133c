"""Subcommands of the ``llmbench`` CLI, one module each (see ``llmbench.cli``)."""
