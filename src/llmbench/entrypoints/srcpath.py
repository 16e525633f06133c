"""The one ``sys.path`` bootstrap of the entry points.

In a container an entry point runs as a file from the mounted source
(``python3 /opt/llmbench/src/llmbench/entrypoints/nemo2.py``, ``llmbench.launch.entry``):
Python then puts this folder first on ``sys.path``, so the entry point imports this module
by its bare name, and this module puts the source tree on ``sys.path`` before the entry
point imports llmbench. Importing it again (or as ``llmbench.entrypoints.srcpath``) changes
nothing.
"""

import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2])
if SRC not in sys.path:
    sys.path.insert(0, SRC)
