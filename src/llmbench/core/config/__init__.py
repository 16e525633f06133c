"""Everywhere, pure: the sweep config loaded, checked and expanded into run specs.

Every bad value stops here, before anything runs or is submitted, with one line that
names the key, the bad value and what is allowed. Along its seams: ``schema`` (the JSON
Schema check and its defaults), ``check`` (the one check of a config about to run, given
the ``Host`` it runs on), ``site`` (an experiment with the profile's site values merged
over it) and ``expand`` (each run resolved into a ``RunSpec`` by one constructor).
"""

from llmbench.core.config.check import (
    LOCAL_RANKS_PER_CORE,
    REFERENCE_SUFFIXES,
    Host,
    check_config,
    default_base_dirs,
    load_config,
    local_cpu_runs,
    validate_and_expand,
    validate_config,
)
from llmbench.core.config.expand import run_specs
from llmbench.core.config.schema import config_schema
from llmbench.core.config.site import check_experiment, workflow_config
from llmbench.core.site_file import SITE_KEYS, merge_config, site_keys_in, site_keys_warning

__all__ = [
    "LOCAL_RANKS_PER_CORE",
    "REFERENCE_SUFFIXES",
    "SITE_KEYS",
    "Host",
    "check_config",
    "check_experiment",
    "config_schema",
    "default_base_dirs",
    "load_config",
    "local_cpu_runs",
    "merge_config",
    "run_specs",
    "site_keys_in",
    "site_keys_warning",
    "validate_and_expand",
    "validate_config",
    "workflow_config",
]
