"""Where the history is: ``--history``, else ``history.path`` of the config file."""

from __future__ import annotations

import os
from pathlib import Path

from llmbench.core.config import Host, load_config
from llmbench.errors import ConfigError
from llmbench.history.store import History, open_history


def history_from(option: str | None, config_path: str | Path) -> History | None:
    """The ``--history`` value, else the config's ``history.path`` (None when neither)."""
    if option:
        return open_history(option)
    config_path = Path(config_path)
    if config_path.is_file():
        here = Host(cores=os.cpu_count() or 1, environ=os.environ)
        location = load_config(config_path, host=here)["history"]["path"]
        if location:
            return open_history(location)
    return None


def require_history(option: str | None, config_path: str | Path) -> History:
    history = history_from(option, config_path)
    if history is None:
        raise ConfigError(
            f"no history given; allowed: --history PATH or URL, or history.path in {config_path}"
        )
    return history
