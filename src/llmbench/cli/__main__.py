"""``python -m llmbench.cli``: the ``llmbench`` command."""

import sys

from llmbench.cli import main

sys.exit(main())
