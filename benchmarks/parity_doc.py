"""Write the generated settings part of docs/parity.md from the catalog's data.

    python -m benchmarks.parity_doc [PATH]

``PATH`` defaults to docs/parity.md; everything after its marker line is replaced by
``llmbench.core.catalog.parity_doc.with_settings`` (the package renders, this writes).
A test keeps the committed file equal to what this writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from llmbench.core.catalog.parity_doc import with_settings
from llmbench.errors import ConfigError, exit_with_error
from llmbench.files.atomic import write_text_atomic

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "docs" / "parity.md"


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else DEFAULT_PATH
    try:
        text = with_settings(path.read_text(), str(path))
    except (OSError, ConfigError) as err:
        exit_with_error(err)
    write_text_atomic(text, path)


if __name__ == "__main__":
    main(sys.argv[1:])
