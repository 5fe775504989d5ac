"""Compatibility shim: ``pgexact-bench`` now lives in :mod:`pgexact.bench`.

``pgexact.cli.main`` and the helpers older scripts and tests import from here are re-exported
from their new modules; new code should import from :mod:`pgexact.bench` directly.
"""

from __future__ import annotations

import sys  # noqa: F401 - tests patch ``pgexact.cli.sys.stderr`` (the same sys module)

from .bench.cli import main
from .bench.common import UsageError as _UsageError
from .bench.common import bars_enabled as _bars_enabled
from .bench.data import eval_rows as _eval_rows
from .bench.data import load_named as _load_named
from .bench.models import fit_recipe as _fit_recipe

# the private names are re-exported for tests and scripts written against the old module
__all__ = ["_UsageError", "_bars_enabled", "_eval_rows", "_fit_recipe", "_load_named", "main"]

if __name__ == "__main__":  # pragma: no cover - python -m pgexact.cli
    sys.exit(main())
