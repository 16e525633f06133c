"""One error tree. Messages name the file/line or config key, the bad value and what is allowed."""


class LlmbenchError(Exception):
    """Base of every error llmbench raises on purpose."""


class ConfigError(LlmbenchError):
    """A config value, catalog row or override that cannot run."""


class ParseError(LlmbenchError):
    """A training log that cannot be read at all (not: a log of a failed run)."""


class LaunchError(LlmbenchError):
    """A launch command or container operation that cannot be rendered or run."""
