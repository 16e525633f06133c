"""Shared file leaves, used wherever imported: atomic writes, regular files, job logs."""
