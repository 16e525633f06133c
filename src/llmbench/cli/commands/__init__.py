"""Where a person types it: the subcommands, each a module with ``register``."""
