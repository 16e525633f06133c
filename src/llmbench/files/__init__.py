"""Wherever imported: shared file leaves (atomic writes, regular files, job logs)."""
