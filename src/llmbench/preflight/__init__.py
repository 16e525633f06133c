"""Preflight: check and measure every node before a sweep trains on it, and keep the bad
ones out of its train jobs (docs/preflight.md)."""
