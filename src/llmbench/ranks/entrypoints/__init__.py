"""On each rank, inside the framework's container: one entry point per framework.

Each reads ``run_spec.json`` and trains in-process (no second scheduler submission).
The frameworks are imported lazily inside ``main``; the "spec -> settings" mapping is
pure and unit-tested without them.
"""
