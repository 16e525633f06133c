"""Everywhere, pure: what to run (catalog, config, run specs, formulas, limits)."""
