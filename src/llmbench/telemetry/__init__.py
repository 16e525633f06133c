"""Telemetry of a run: samples of power, energy, clocks and utilisation beside its ranks,
aligned to the step window (docs/telemetry.md)."""
