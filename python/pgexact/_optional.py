"""Optional dependencies: one place that imports them and names the extra that provides them."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Optional

__all__ = ["EXTRAS", "install_hint", "optional", "require"]

#: module -> (the package to install, the pgexact extra that includes it)
EXTRAS = {
    "shap": ("shap", "all"),
    "pandas": ("pandas", "all"),
    "matplotlib": ("matplotlib", "all"),
    "tqdm": ("tqdm", "all"),
    "scipy": ("scipy", "all"),
    "xgboost": ("xgboost", "xgboost"),
    "lightgbm": ("lightgbm", "lightgbm"),
    "catboost": ("catboost", "catboost"),
    "sklearn": ("scikit-learn", "sklearn"),
    "dask": ("dask", "dask"),
    "distributed": ("distributed", "dask"),
}


def _top(module: str) -> str:
    return module.split(".", 1)[0]


def install_hint(module: str) -> str:
    """``pip install 'pgexact[extra]'`` (or the bare package) for ``module``."""
    package, extra = EXTRAS.get(_top(module), (_top(module), None))
    return f"pip install 'pgexact[{extra}]'" if extra else f"pip install {package}"


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise ImportError saying what needs it and what to install.

    Parameters
    ----------
    module : str
        The module to import, e.g. ``"shap"`` or ``"matplotlib.pyplot"``.
    purpose : str
        What needs it, for the message (``"shap_ranking()"``).

    Returns
    -------
    module
        The imported module.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        package = EXTRAS.get(_top(module), (_top(module), None))[0]
        raise ImportError(f"{purpose} needs the {package} package: "
                          f"{install_hint(module)}", name=_top(module)) from None


def optional(module: str) -> Optional[ModuleType]:
    """Import ``module`` if it is installed, else None (for features that degrade gracefully)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None
