"""``python -m pgexact.bench``: the same as the ``pgexact-bench`` command."""

import sys

from .cli import main

if __name__ == "__main__":  # pragma: no cover - run as a program
    sys.exit(main())
